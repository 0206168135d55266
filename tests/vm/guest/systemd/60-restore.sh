# restore: with restore_on_exit = true, `systemctl stop` puts back the masks the IRQs had before
# irqwise first changed them this boot, across the restarts since. Expected values come from the
# journal, not from irqwise's own record: CPUS_OLD of each IRQ's first change entry of the boot.
SCEN=restore
first_old() { # first_old IRQ: CPUS_OLD of IRQ's first change entry of this boot
  journalctl --no-pager -b -u $UNIT IRQ="$1" -o json | grep -m1 -o '"CPUS_OLD":"[^"]*"' | cut -d'"' -f4
}
ORIG=""
for i in $NIC_IRQS; do ORIG="$ORIG $i=$(first_old "$i")"; done
ORIG=${ORIG# }
printf '[global]\nrestore_on_exit = true\n' > $DROPINS/50-vm-restore.toml
systemctl restart irqwise.service
read_masks "$NIC_IRQS"
placed() { REPLY="now $MASKS; before irqwise: $ORIG"; [ "$MASKS" = "$STARTUP_MASKS" ] && [ "$MASKS" != "$ORIG" ]; }
check placed "restarted with restore_on_exit: the usual placement, unlike the masks before irqwise" -- placed
jmark
systemctl stop irqwise.service; RC=$?
read_masks "$NIC_IRQS"
restored() {
  REPLY="exit $RC; $MASKS"
  [ $RC = 0 ] && [ "$MASKS" = "$ORIG" ] || { REPLY="$REPLY, before irqwise (journal): $ORIG"; return 1; }
  unit_log_has 'restored [0-9]+ of [0-9]+ IRQs' && REPLY="exit $RC; $MASKS; daemon: $REPLY"
}
check restored "systemctl stop: the masks from before irqwise's first change are back" -- restored
stopped_clean() { REPLY="Result=$(prop Result), ExecMainStatus=$(prop ExecMainStatus)"; [ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ]; }
check stop_clean "the stop is clean (exit 0, result success)" -- stopped_clean
rm -f $DROPINS/50-vm-restore.toml
systemctl start irqwise.service
