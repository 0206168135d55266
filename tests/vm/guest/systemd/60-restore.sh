# restore: with restore_on_exit = true, `systemctl stop` puts back the masks the daemon found at
# its start (here: each queue on its own fixed pair of CPUs, unlike any placement).
SCEN=restore
systemctl stop irqwise.service
k=0
for i in $NIC_IRQS; do echo "$((k % 4 * 2))-$((k % 4 * 2 + 1))" > /proc/irq/$i/smp_affinity_list; k=$((k + 1)); done
read_masks "$NIC_IRQS"; ORIG=$MASKS
printf '[global]\nrestore_on_exit = true\n' > $DROPINS/50-vm-restore.toml
systemctl start irqwise.service
read_masks "$NIC_IRQS"
moved() { REPLY="$MASKS"; [ "$MASKS" = "$STARTUP_MASKS" ]; }
check placed "started with restore_on_exit: the usual placement" -- moved
jmark
systemctl stop irqwise.service; RC=$?
read_masks "$NIC_IRQS"
restored() {
  REPLY="exit $RC; $MASKS"
  [ $RC = 0 ] && [ "$MASKS" = "$ORIG" ] || { REPLY="$REPLY, found at start: $ORIG"; return 1; }
  unit_log_has 'restored [0-9]+ of [0-9]+ IRQs' && REPLY="exit $RC; daemon: $REPLY"
}
check restored "systemctl stop: the masks found at start are back" -- restored
stopped_clean() { REPLY="Result=$(prop Result), ExecMainStatus=$(prop ExecMainStatus)"; [ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ]; }
check stop_clean "the stop is clean (exit 0, result success)" -- stopped_clean
rm -f $DROPINS/50-vm-restore.toml
systemctl start irqwise.service
