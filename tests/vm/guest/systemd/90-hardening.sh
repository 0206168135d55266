# hardening: why the unit leaves ProtectKernelTunables= off. With it (a drop-in), systemd 252
# mounts /proc/irq read-only for the daemon even though ReadWritePaths= names /proc/irq, and every
# write fails with EROFS; without it the same start places the queues.
SCEN=hardening
DROPIN_DIR=/etc/systemd/system/irqwise.service.d
mkdir -p $DROPIN_DIR
printf '[Service]\nProtectKernelTunables=yes\n' > $DROPIN_DIR/50-vm-tunables.conf
systemctl daemon-reload
systemctl stop irqwise.service
scramble
systemctl start irqwise.service
read_masks "$NIC_IRQS"; WITH=$MASKS
tunables_break() {
  local ro
  ro=$(grep -c ' /proc/irq ro,' /proc/"$(main_pid)"/mountinfo)
  journalctl --sync 2>/dev/null
  REPLY="/proc/irq read-only mounts in the daemon: $ro; $(journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$(main_pid)" | grep -m1 -o 'EROFS.*')"
  [ "$ro" -ge 1 ] && [ "$WITH" != "$STARTUP_MASKS" ] && journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$(main_pid)" | grep -q EROFS
}
check tunables_break_writes "ProtectKernelTunables=yes (drop-in): /proc/irq read-only despite ReadWritePaths=, writes fail" -- tunables_break
# The daemon says why, once: one warning (not one per IRQ) naming the read-only mount and the
# setting, and the unit's status says it.
tunables_said() {
  local pid status n
  pid=$(main_pid); status=$(prop StatusText)
  journalctl --sync 2>/dev/null
  n=$(journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$pid" MESSAGE_ID=4d1be03b516e4be1bab6bb969edf47b5 | grep -c 'ProtectKernelTunables')
  REPLY="diagnoses in the journal: $n; per-IRQ write warnings: $(journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$pid" MESSAGE_ID=e5cb5fa2c27345efbed92da95ac4c142 | grep -c .); StatusText: ${status:0:160}"
  [ "$n" = 1 ] && case $status in *"read-only"*) true;; *) false;; esac &&
    [ "$(journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$pid" MESSAGE_ID=e5cb5fa2c27345efbed92da95ac4c142 | grep -c .)" = 0 ]
}
check tunables_said "the daemon names the cause once (MESSAGE_ID, no warning per IRQ) and in its status" -- tunables_said
rm -f $DROPIN_DIR/50-vm-tunables.conf
systemctl daemon-reload
systemctl restart irqwise.service
read_masks "$NIC_IRQS"
check without_tunables "the drop-in removed: placed again" -- placed_as_planned
