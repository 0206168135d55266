# link-flap: vmxnet3 frees its IRQs on link down and requests them again on link up.
SCEN=link-flap
log_mark
ip link set eth0 down
i=0; while nic_queues eth0; [ -n "$QIRQS" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
check irqs_freed "link down frees the queue IRQs" -- [ -z "$QIRQS" ]
now; T0=$NOW
ip link set eth0 up
i=0; while nic_queues eth0; [ "$(count "$QIRQS")" -lt 8 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
read_masks "$QIRQS"; note "right after link up: $MASKS"
mask_lists; [ "$REPLY" = "$STARTUP_LISTS" ] && KEPT=yes || KEPT=no
measure kernel_kept $KEPT   # yes: request_irq() kept the masks written before (IRQD_AFFINITY_SET)
NIC_IRQS=$QIRQS
settle "$NIC_IRQS" all_single 30000
[ $KEPT = yes ] && measure up_react_ms 0 || measure up_react_ms "$SETTLE_MS"
read_masks "$NIC_IRQS"; mask_lists
check restored "placement after link up = startup placement" -- [ "$REPLY" = "$STARTUP_LISTS" ]
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
