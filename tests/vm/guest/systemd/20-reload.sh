# reload: `systemctl reload irqwise` (ExecReload=) with a valid drop-in, which is in force when the
# command returns, and with an invalid one, which fails the reload, names the file in the
# journal, and leaves the daemon (not even signalled) with the last good placement.
SCEN=reload
PID0=$(main_pid)
printf '[[device]]\nmatch = { driver = "vmxnet3" }\nnode = 0\n' > $DROPINS/50-vm-node0.toml
jmark
now; T0=$NOW
RELOAD_OUT=$(systemctl reload irqwise.service 2>&1); RELOAD_RC=$?
read_masks "$NIC_IRQS"; AT_RETURN=$MASKS
now; measure valid_ms $((NOW - T0))
valid_reload() {
  REPLY="systemctl reload: exit $RELOAD_RC ${RELOAD_OUT:0:160}"
  [ $RELOAD_RC = 0 ] || return 1
  placed_as_planned 0 || return 1
  read_masks "$NIC_IRQS"; [ "$MASKS" = "$AT_RETURN" ] || { REPLY="masks changed after reload returned: $AT_RETURN -> $MASKS"; return 1; }
  [ "$(main_pid)" = "$PID0" ] || { REPLY="main process changed: $PID0 -> $(main_pid)"; return 1; }
}
check valid "valid drop-in (vmxnet3 on node 0): in force when systemctl reload returns" -- valid_reload
check valid_logged "the reload is in the unit's journal" -- unit_log_has 'reloaded the configuration'
GOOD=$MASKS
PASSES=$(state_passes)

printf '[[device]]\nmatch = { driver = "vmxnet3" }\nnode = "zero"\n' > $DROPINS/60-vm-bad.toml
jmark
RELOAD_OUT=$(systemctl reload irqwise.service 2>&1); RELOAD_RC=$?
invalid_fails() { REPLY="exit $RELOAD_RC: ${RELOAD_OUT:0:200}"; [ $RELOAD_RC != 0 ]; }
check invalid_fails "invalid drop-in: systemctl reload fails" -- invalid_fails
check invalid_journal "the journal names the file and line" -- unit_log_has "$DROPINS/60-vm-bad.toml:3:"
invalid_kept() {
  read_masks "$NIC_IRQS"
  REPLY="MainPID $PID0 -> $(main_pid), $(prop ActiveState), passes $PASSES -> $(state_passes)"
  [ "$MASKS" = "$GOOD" ] && [ "$(main_pid)" = "$PID0" ] && [ "$(prop ActiveState)" = active ] &&
    [ "$(state_passes)" = "$PASSES" ]
}
check invalid_kept "the daemon keeps running, not signalled, with the last good placement" -- invalid_kept

rm -f $DROPINS/50-vm-node0.toml $DROPINS/60-vm-bad.toml
systemctl reload irqwise.service; RELOAD_RC=$?
read_masks "$NIC_IRQS"
back() {
  REPLY="exit $RELOAD_RC; $MASKS"
  [ $RELOAD_RC = 0 ] && [ "$MASKS" = "$STARTUP_MASKS" ] && [ "$GOOD" != "$STARTUP_MASKS" ]
}
check back "drop-ins removed, reloaded: from node 0 back to the startup placement" -- back
