# two-nics: a second multi-queue NIC on eth0's node (a vmxnet3 hot-added into node 1's free root
# port and kept for the irqbalance comparison): the queues of both share the machine, a CPU
# offline moves only the queues that lived on it, and with two queues to a CPU the two NICs take
# disjoint CPUs of their node.
SCEN=two-nics
NIC2MAC=52:54:00:00:00:03
nic2_iface() { iface_with_mac "$NIC2MAC"; NIC2=$REPLY; [ -n "$NIC2" ]; }
write_config ''
log_mark
start_daemon
echo "HOST device_add vmxnet3,id=nic2,netdev=hn0,bus=rphot,mac=$NIC2MAC"
i=0; while ! nic2_iface && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
check added "second vmxnet3 on node 1 (${NIC2:-none})" -- [ -n "$NIC2" ]
NIC2_IRQS=""
if [ -n "$NIC2" ]; then
  ip link set "$NIC2" up
  i=0; while nic_queues "$NIC2"; [ "$(count "$QIRQS")" -lt 8 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
  NIC2_IRQS=$QIRQS
  nic_queues eth0; NIC_IRQS=$QIRQS
  BOTH="$NIC_IRQS $NIC2_IRQS"
  now; T0=$NOW
  settle "$BOTH" all_single 30000
  plan_rows
  check both_planned "both NICs' queue IRQs on irqwise's planned CPUs" -- matches_plan "$BOTH"
  balanced() { cpu_load "$BOTH"; REPLY="queues per CPU: $REPLY"; [ "$LOAD_SPREAD" -le 1 ]; }
  check balanced "16 queues on 8 CPUs: per-CPU counts differ by at most one" -- balanced
  cpu_load "$BOTH"; measure load_irqwise "$REPLY"

  # A CPU offline moves only what lived on it: the CPU of eth0's queue 1.
  read_masks "$BOTH"; BEFORE=$MASKS
  OFF=$(echo "$BEFORE" | cut -d' ' -f2); OFF=${OFF#*=}
  LIVED=0; for e in $BEFORE; do [ "${e#*=}" = "$OFF" ] && LIVED=$((LIVED + 1)); done
  log_mark
  now; T0=$NOW
  echo 0 > /sys/devices/system/cpu/cpu$OFF/online
  settle "$BOTH" "all_single $OFF" 30000
  read_masks "$BOTH"; AFTER=$MASKS
  check offline_moved_only "CPU $OFF offline: only the $LIVED queues that lived on it moved" -- moved_only "$BEFORE" "$AFTER" "$OFF"
  log_writes; W_OFF=$REPLY
  measure offline_lived "$LIVED"; measure offline_writes "$W_OFF"
  check offline_writes "the daemon wrote $W_OFF IRQs for the $LIVED that lived on CPU $OFF" -- [ "$W_OFF" -eq "$LIVED" ]
  now; T0=$NOW
  echo 1 > /sys/devices/system/cpu/cpu$OFF/online
  settle "$BOTH" '[ "$MASKS" = "$BEFORE" ]' 30000
  check online_restored "CPU $OFF back: both NICs' placement from before" -- [ "$SETTLE_MS" -ge 0 ]
  sleep 1; log_writes; W_ON=$((REPLY - W_OFF)); measure online_writes "$W_ON"
  check online_writes "the daemon wrote $W_ON IRQs to bring them home" -- [ "$W_ON" -eq "$LIVED" ]

  # Four queues to a CPU: each NIC needs two CPUs, and node 1 has four.
  write_config '[[device]]
match.driver = "vmxnet3"
queues_per_cpu = 4'
  now; T0=$NOW
  kill -HUP "$DAEMON_PID"
  settle "$BOTH" all_single 30000
  disjoint() {
    local a="" b="" c n
    read_masks "$NIC_IRQS"; mask_lists; for c in $REPLY; do contains "$a" "$c" || a="$a $c"; done
    read_masks "$NIC2_IRQS"; mask_lists; for c in $REPLY; do contains "$b" "$c" || b="$b $c"; done
    REPLY="eth0 on$a, $NIC2 on$b"
    for c in $a $b; do eval "n=\$NODE_$c"; [ "$n" = "$NIC_NODE" ] || { REPLY="$REPLY; CPU $c is not on node $NIC_NODE"; return 1; }; done
    for c in $a; do contains "$b" "$c" && return 1; done
    return 0
  }
  check disjoint "queues_per_cpu = 4: the two NICs on disjoint CPUs of node $NIC_NODE" -- disjoint
  measure disjoint_cpus "$REPLY"
  write_config ''
  kill -HUP "$DAEMON_PID"
  settle "$BOTH" all_single 30000
  check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
fi
stop_daemon >/dev/null 2>&1
