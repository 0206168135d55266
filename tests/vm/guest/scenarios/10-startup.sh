# startup: the daemon's first pass on a freshly booted machine.
SCEN=startup
nic_queues eth0; NIC_IRQS=$QIRQS
irqs_named nvme0q; NVME_IO=""
for i in $REPLY; do [ "$i" = "$(echo $REPLY | cut -d' ' -f1)" ] || NVME_IO="$NVME_IO $i"; done
NVME_IO=${NVME_IO# }
read_masks "$NVME_IO"; NVME_BEFORE=$MASKS
read_masks "$NIC_IRQS"; note "before the daemon: NIC $MASKS; NVMe $NVME_BEFORE"
LOGMARK=0
now; T0=$NOW
start_daemon
check daemon_run "the daemon is irqwise run (not the apply-loop stand-in)" -- [ "$DAEMON_KIND" = run ]
settle "$NIC_IRQS" all_single 60000
measure place_ms "$SETTLE_MS"
check plan "irqwise plan --json runs beside the daemon" -- plan_ok
check nic_planned "eth0 queue IRQs on irqwise's planned CPUs" -- matches_plan "$NIC_IRQS"
read_masks "$NIC_IRQS"; mask_lists; STARTUP_LISTS=$REPLY; STARTUP_MASKS=$MASKS
check nic_spread "node $NIC_NODE, distinct cores first (from sysfs topology)" -- check_spread "$NIC_NODE" "$STARTUP_LISTS"

nvme_managed() {
  local i
  [ -n "$NVME_IO" ] || { REPLY="no NVMe I/O IRQs"; return 1; }
  for i in $NVME_IO; do
    plan_field "$i" 2; [ "$REPLY" = managed ] || { REPLY="irq $i action $REPLY"; return 1; }
    plan_field "$i" 3; [ "$REPLY" = true ] || { REPLY="irq $i managed=$REPLY"; return 1; }
  done
  REPLY="$(count "$NVME_IO") I/O IRQs"
}
check nvme_managed "NVMe I/O IRQs planned as kernel-managed" -- nvme_managed
check nvme_prediction "irqwise's predicted NVMe masks = the 6.1 kernel's" -- matches_plan "$NVME_IO"
read_masks "$NVME_IO"
check nvme_untouched "NVMe masks unchanged by the daemon" -- [ "$MASKS" = "$NVME_BEFORE" ]

no_repeated_warnings() {
  local dups
  dups=$(grep -iE '\bwarn' $DLOG | awk '{ l = tolower($0); i = index(l, "warn"); print substr(l, i) }' | sort | uniq -d | head -2)
  REPLY="$(grep -ciE '\bwarn' $DLOG) warning line(s)${dups:+, repeated: $dups}"
  [ -z "$dups" ]
}
check no_repeated_warnings "daemon log" -- no_repeated_warnings
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
placement_metrics "$NIC_IRQS" "$NIC_NODE"
