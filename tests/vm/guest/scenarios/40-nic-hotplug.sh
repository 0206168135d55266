# nic-hotplug: the host hot-adds a second vmxnet3 (node 1) through the QEMU monitor, then removes it.
SCEN=nic-hotplug
HOTMAC=52:54:00:00:00:02
hot_iface() { iface_with_mac "$HOTMAC"; HOT=$REPLY; [ -n "$HOT" ]; }
all_masks; MACHINE_BEFORE=$MASKS
log_mark
echo "HOST device_add vmxnet3,id=hotnic,netdev=hn0,bus=rphot,mac=$HOTMAC"
i=0; while ! hot_iface && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
check added "hot-added vmxnet3 appears (${HOT:-none})" -- [ -n "$HOT" ]
if [ -n "$HOT" ]; then
  HOT_NODE=$(cat /sys/class/net/$HOT/device/numa_node)
  now; T0=$NOW
  ip link set "$HOT" up
  i=0; while nic_queues "$HOT"; [ "$(count "$QIRQS")" -lt 8 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
  HOT_IRQS=$QIRQS
  settle "$HOT_IRQS" all_single 30000
  measure place_ms "$SETTLE_MS"
  plan_rows
  check placed "$HOT queue IRQs on irqwise's planned CPUs" -- matches_plan "$HOT_IRQS"
  read_masks "$HOT_IRQS"; mask_lists
  check spread "$HOT on node $HOT_NODE, distinct cores first" -- check_spread "$HOT_NODE" "$REPLY"
  check add_clean "no ERROR/WARN in the daemon log from device_add to placed" -- no_log_problems
  log_mark
  HOTNAME=$HOT
  now; T0=$NOW
  echo "HOST device_del hotnic"
  i=0; while hot_iface && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
  now; measure remove_ms $((NOW - T0))
  hot_gone() { ! hot_iface; }
  check removed "$HOTNAME is gone" -- hot_gone
  sleep 2
  check remove_clean "no ERROR/WARN in the daemon log after the removal" -- no_log_problems
  check daemon_alive "daemon still running" -- daemon_alive
  all_masks
  check others_untouched "after add + remove, every other IRQ's mask is as before" -- same_masks "$MACHINE_BEFORE" "$MASKS" "$HOT_IRQS"
fi
read_masks "$NIC_IRQS"; mask_lists
check eth0_intact "eth0 placement unchanged" -- [ "$REPLY" = "$STARTUP_LISTS" ]
