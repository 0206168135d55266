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
read_masks "$NIC_IRQS"; mask_lists
check offline_spread "re-plan keeps node $NIC_NODE, distinct cores first" -- check_spread "$NIC_NODE" "$REPLY"
now; T0=$NOW
echo 1 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
measure online_react_ms "$SETTLE_MS"
check online_restored "CPU $OFF back: the startup placement returns" -- [ "$SETTLE_MS" -ge 0 ]
read_masks "$NVME_IO"
check nvme_restored "kernel-managed NVMe masks back as before" -- [ "$MASKS" = "$NVME_BEFORE" ]
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
