# config-error: an invalid configuration at start makes the daemon exit with status 2, which the
# unit does not restart on (RestartPreventExitStatus=2): it stays failed instead of retrying
# every RestartSec until the start limit.
SCEN=config-error
printf '[global]\nbanned_cpus = "zero"\n' > $DROPINS/50-vm-bad.toml
jmark
systemctl restart irqwise.service 2>/dev/null; RC=$?
NR0=$(prop NRestarts)
RESTART_US=$(prop RestartUSec)
measure restart_sec "$RESTART_US"
# Four RestartSec periods: a restart loop would have restarted at least three times by then.
sleep 8
fails() {
  REPLY="systemctl restart: exit $RC; $(prop ActiveState), ExecMainStatus=$(prop ExecMainStatus), Result=$(prop Result)"
  [ $RC != 0 ] && [ "$(prop ActiveState)" = failed ] && [ "$(prop ExecMainStatus)" = 2 ]
}
check start_fails "the start fails with status 2" -- fails
check error_logged "the journal names the file and line" -- unit_log_has "$DROPINS/50-vm-bad.toml:2:"
no_loop() {
  local starts
  starts=$(jsince -u $UNIT | grep -c 'Starting ')
  REPLY="NRestarts $NR0 -> $(prop NRestarts) after 8 s (RestartSec $RESTART_US), $starts start(s) in the journal"
  [ "$(prop NRestarts)" = "$NR0" ] && [ "$starts" -le 1 ]
}
check no_restart_loop "not restarted in a loop" -- no_loop
rm -f $DROPINS/50-vm-bad.toml
systemctl reset-failed irqwise.service
systemctl start irqwise.service
read_masks "$NIC_IRQS"
recovered() { REPLY="$(prop ActiveState)"; [ "$REPLY" = active ] && [ "$MASKS" = "$STARTUP_MASKS" ]; }
check recovered "fixed, started again: active, the startup placement" -- recovered
