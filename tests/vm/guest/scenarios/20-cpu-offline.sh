# cpu-offline: a CPU hosting a NIC queue goes offline, then comes back.
SCEN=cpu-offline
read_masks "$NIC_IRQS"; BEFORE=$MASKS
OFF=$(echo "$BEFORE" | cut -d' ' -f1); OFF=${OFF#*=}
note "offlining CPU $OFF (queue 0)"
log_mark
now; T0=$NOW
echo 0 > /sys/devices/system/cpu/cpu$OFF/online
read_masks "$NIC_IRQS"; note "right after the write: $MASKS"
settle "$NIC_IRQS" "all_single $OFF" 30000
measure offline_react_ms "$SETTLE_MS"
check offline_replaced "no queue on CPU $OFF or on the kernel's all-CPU fallback" -- [ "$SETTLE_MS" -ge 0 ]
plan_rows
check offline_planned "queues on irqwise's re-planned CPUs" -- matches_plan "$NIC_IRQS"
read_masks "$NIC_IRQS"; AFTER=$MASKS
check offline_moved_only "only the queue that lived on CPU $OFF moved" -- moved_only "$BEFORE" "$AFTER" "$OFF"
log_writes; W_OFF=$REPLY; measure offline_writes "$W_OFF"
check offline_writes "the daemon wrote one IRQ per queue that lived on CPU $OFF ($REPLY written)" -- [ "$REPLY" -eq 1 ]
sibling_of_home() {
  local e=${AFTER%% *} s; e=${e#*=}; eval "s=\$CORE_$e"; eval "h=\$CORE_$OFF"
  REPLY="queue 0 now on CPU $e (core $s; its home $OFF is core $h)"; [ "$s" = "$h" ]
}
check offline_nearest "queue 0 moved to its home's sibling (same core)" -- sibling_of_home
now; T0=$NOW
echo 1 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
measure online_react_ms "$SETTLE_MS"
check online_restored "CPU $OFF back: the startup placement returns" -- [ "$SETTLE_MS" -ge 0 ]
sleep 1; log_writes; measure online_writes $((REPLY - W_OFF))
read_masks "$NVME_IO"
check nvme_restored "kernel-managed NVMe masks back as before" -- [ "$MASKS" = "$NVME_BEFORE" ]
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
