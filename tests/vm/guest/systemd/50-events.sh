# events: CPU offline/online and a NIC link flap with the daemon in its sandbox. The state file
# must name the event as the pass's trigger ("cpu", "link <nic> up"): that proves the kernel
# uevent and rtnetlink sockets work under the unit (the reconcile timer, 60 s, says "reconcile").
SCEN=events
read_masks "$NIC_IRQS"; BEFORE=$MASKS
OFF=${BEFORE%% *}; OFF=${OFF#*=}
jmark
now; T0=$NOW
echo 0 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" "all_single $OFF" 20000
measure offline_react_ms "$SETTLE_MS"
offline() {
  REPLY="CPU $OFF offline: settled after ${SETTLE_MS} ms"
  [ "$SETTLE_MS" -ge 0 ] || return 1
  state_has cpu || { REPLY="$REPLY; the last pass was not for a CPU event"; return 1; }
  plan_ok && matches_plan "$NIC_IRQS"
}
check cpu_offline "no queue on the offlined CPU, as re-planned, on the CPU uevent" -- offline
now; T0=$NOW
echo 1 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 20000
measure online_react_ms "$SETTLE_MS"
online() { REPLY="settled after ${SETTLE_MS} ms"; [ "$SETTLE_MS" -ge 0 ] && state_has cpu; }
check cpu_online "CPU $OFF back: the placement before, on the CPU uevent" -- online

ip link set "$NIC" down
now; T0=$NOW
link_down() { nic_queues "$NIC"; [ -z "$QIRQS" ]; }
wait_until 10000 link_down
ip link set "$NIC" up
now; T0=$NOW
wait_until 20000 state_has "link $NIC up"; LINK_SEEN_MS=$WAITED_MS
measure link_seen_ms "$LINK_SEEN_MS"
wait_until 20000 nic_up; NIC_IRQS=$QIRQS
settle "$NIC_IRQS" all_single 20000
link() {
  REPLY="link $NIC up seen after ${LINK_SEEN_MS} ms"
  [ "$LINK_SEEN_MS" -ge 0 ] || { REPLY="no pass for \"link $NIC up\" within 20 s"; return 1; }
  read_masks "$NIC_IRQS"; mask_lists
  [ "$REPLY" = "$STARTUP_LISTS" ] || { REPLY="after link up: $REPLY, at start: $STARTUP_LISTS"; return 1; }
}
check link_flap "link down/up: rtnetlink event seen, the startup placement holds" -- link
check netlink_in_sandbox "no event source dropped, nothing denied in the daemon's life (journal)" -- daemon_quiet
