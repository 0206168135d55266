# irqbalance: the same placement metrics for irqbalance in the same guest (irqwise stopped).
SCEN=irqbalance
IB=/usr/sbin/irqbalance
if [ ! -x $IB ]; then
  result ran FAIL "irqbalance not in the initramfs (apt-get download irqbalance failed on the host?)"
else
  stop_daemon >/dev/null 2>&1   # irqwise must not interfere (60-cli.sh normally stopped it)
  mkdir -p /run/irqbalance
  NODE_LIST=$(cat /sys/devices/system/node/node$NIC_NODE/cpulist)
  for i in $NIC_IRQS ${NIC2_IRQS:-}; do echo "$NODE_LIST" > /proc/irq/$i/smp_affinity_list; done   # the kernel's default
  now; T0=$NOW
  $IB --oneshot --foreground > /tmp/irqbalance.log 2>&1; IB_RC=$?
  now; measure oneshot_ms $((NOW - T0))
  check ran "irqbalance --oneshot exits 0 (rc $IB_RC)" -- [ $IB_RC = 0 ]
  placement_metrics "$NIC_IRQS" "$NIC_NODE"
  if [ -n "${NIC2_IRQS:-}" ]; then cpu_load "$NIC_IRQS $NIC2_IRQS"; measure load_both "$REPLY"; fi
  echo 1 > /sys/class/net/eth0/threaded   # threaded NAPI, as in 35-napi-threads.sh
  napi_thread_pids eth0; for p in $PIDS; do busybox taskset -p -c 0-7 "$p" > /dev/null; done   # as the kernel starts them
  $IB --foreground >> /tmp/irqbalance.log 2>&1 &
  IB_PID=$!
  sleep 12   # past its first 10 s balancing interval
  # Measured, not checked: where irqbalance leaves the NAPI threads (irqwise: with their IRQs).
  if threads_follow; then measure napi_threads_follow yes; else measure napi_threads_follow "no: $REPLY"; fi
  measure napi_threads "$THREAD_LISTS"
  echo 0 > /sys/class/net/eth0/threaded
  read -r OFF < /proc/irq/${NIC_IRQS%% *}/effective_affinity_list
  read_masks "$NIC_IRQS"; BEFORE=$MASKS
  read_masks "$NIC_IRQS ${NIC2_IRQS:-}"; BOTH_BEFORE=$MASKS
  note "daemon mode, before offlining CPU $OFF: $BEFORE"
  now; T0=$NOW
  echo 0 > /sys/devices/system/cpu/cpu$OFF/online
  read_masks "$NIC_IRQS"; note "right after the write: $MASKS"
  settle "$NIC_IRQS" "off_and_not_fallback $OFF" 25000
  measure offline_react_ms "$SETTLE_MS"
  read_masks "$NIC_IRQS"; note "25 s later at most: $MASKS"
  read_masks "$NIC_IRQS ${NIC2_IRQS:-}"; same_masks "$BOTH_BEFORE" "$MASKS" ""
  if [ -z "$REPLY" ]; then measure offline_moved 0; else measure offline_moved "$(($(count "$REPLY") / 4))"; fi
  now; T0=$NOW
  echo 1 > /sys/devices/system/cpu/cpu$OFF/online
  settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 25000
  measure online_react_ms "$SETTLE_MS"
  read_masks "$NIC_IRQS"; note "after online: $MASKS"
  # Idle cost over the same window as irqwise's (55-idle.sh), nothing changing.
  idle_cost "$IB_PID" "$IDLE_S" || note "idle window: $REPLY"
  [ -n "$IDLE_CHANGED" ] && note "irqbalance changed in its idle window: $IDLE_CHANGED"
  # The storm of 57-storm.sh under irqbalance: its final placement is measured, not checked.
  read_masks "$NIC_IRQS"; STORM_BEFORE=$MASKS; mask_lists; measure storm_initial "$REPLY"
  read -r OFF < /proc/irq/${NIC_IRQS%% *}/effective_affinity_list
  cpu_storm "$OFF" "$STORM_CYCLES" || note "CPU $OFF stayed offline after the storm"
  measure storm_cpu "$OFF"; measure storm_cycles "$STORM_CYCLES"; measure storm_ms "$STORM_MS"
  sleep 12   # past irqbalance's next 10 s balancing interval
  read_masks "$NIC_IRQS"; mask_lists; measure storm_final "$REPLY"
  same_masks "$STORM_BEFORE" "$MASKS" ""
  if [ -z "$REPLY" ]; then measure storm_final_equal yes; else measure storm_final_equal "no ($(($(count "$REPLY") / 4)) of 8 differ)"; fi
  note "after the storm: $MASKS (before: $STORM_BEFORE)"
  # The load of 53-balance.sh (two pinned pings busy on queues 0 and 1) under irqbalance: how
  # often it moved eth0's queue IRQs in the 30 s, and where queues 0 and 1 end.
  if command -v balance_load >/dev/null 2>&1; then
    set -- $NIC_IRQS; IB_Q0=$1; IB_Q1=$2
    read_masks "$NIC_IRQS"; last=$MASKS; changes=0
    now; T0=$NOW
    balance_load 30
    while [ $((NOW - T0)) -lt 30000 ]; do
      usleep 200000; now
      read_masks "$NIC_IRQS"
      if [ "$MASKS" != "$last" ]; then same_masks "$last" "$MASKS" ""; changes=$((changes + $(count "$REPLY") / 4)); last=$MASKS; fi
    done
    wait $B_PIDS
    measure balance_moves "$changes"
    read -r m0 < /proc/irq/$IB_Q0/smp_affinity_list; read -r m1 < /proc/irq/$IB_Q1/smp_affinity_list
    measure balance_end_masks "q0=$m0 q1=$m1"
    # The alternating load: the busy pair changes every 10 s for 40 s.
    read_masks "$NIC_IRQS"; last=$MASKS; changes=0
    balance_alternating 40 &
    ALT_PID=$!
    while kill -0 $ALT_PID 2>/dev/null; do
      usleep 200000
      read_masks "$NIC_IRQS"
      if [ "$MASKS" != "$last" ]; then same_masks "$last" "$MASKS" ""; changes=$((changes + $(count "$REPLY") / 4)); last=$MASKS; fi
    done
    measure alternating_moves "$changes"
    mask_lists; measure alternating_end "$REPLY"
  fi
  kill $IB_PID 2>/dev/null; wait $IB_PID 2>/dev/null
  echo "@@IRQBALANCE_LOG_BEGIN"; tail -40 /tmp/irqbalance.log; echo "@@IRQBALANCE_LOG_END"
fi
