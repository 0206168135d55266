# reconfig: the reconfigurations the kernel's selftest drivers/net/hw/irq.py puts a NIC through
# (link down/up, an XDP program attached and removed, `ethtool -L` to one queue and back), on each
# of QEMU's NICs the guest can have: vmxnet3 (eth0), virtio-net with 4 queue pairs (hot-added, its
# multi-queue backend a tap QEMU creates and nobody configures) and e1000e (hot-added). After
# each, with the daemon running: every IRQ of the NIC ends where irqwise places it, and the
# daemon's mask writes for it are counted. Where the driver keeps its vectors (vmxnet3, e1000e)
# or the kernel keeps the mask, nothing may be written: a needless write costs traffic (bnxt_en
# with TPH restarts a queue on every one). A reconfiguration the driver does not support
# (EOPNOTSUPP) is said, not failed. virtio-net writes its own spread on `ethtool -L` (and CPU
# hotplug): there irqwise places the queues again, and the writes show it.
SCEN=reconfig
RECONF_ROWS=""
# reconf NIC OP EXPECT COMMAND...: runs COMMAND (the reconfiguration), waits for the NIC's IRQs
# to settle, and sets RESULT_OF (PASS/FAIL) and DETAIL: PASS when every IRQ of the NIC is as
# planned and, where EXPECT is 0, the daemon wrote nothing for it; a reconfiguration the driver
# refuses with EOPNOTSUPP passes as not supported. The caller reports it with `result NAME`.
reconf() {
  local nic=$1 op=$2 expect=$3 w0 w1 irqs; shift 3
  writes_so_far; w0=$REPLY
  if ! "$@" > /tmp/reconf.out 2>&1; then
    case $(cat /tmp/reconf.out) in
      *"not supported"*)
        measure "${nic}_${op}_writes" "n/a"; RECONF_ROWS="$RECONF_ROWS $nic:$op:n/a"
        RESULT_OF=PASS DETAIL="$op on $RECONF_IF ($nic): not supported by the driver: $(head -c 120 /tmp/reconf.out | tr '\n' ' ')"
        return 0;;
    esac
    RESULT_OF=FAIL DETAIL="$op on $RECONF_IF ($nic) failed: $(head -c 200 /tmp/reconf.out | tr '\n' ' ')"; return 0
  fi
  # The NIC's IRQs may be freed and requested again (vmxnet3 at link up): wait for them.
  i=0; while device_irqs "$RECONF_IF"; [ "$(count "$REPLY")" -lt "$RECONF_NIRQS" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
  irqs=$REPLY
  now; T0=$NOW
  settle "$irqs" true 20000
  plan_rows
  writes_so_far; w1=$REPLY
  measure "${nic}_${op}_writes" $((w1 - w0)); RECONF_ROWS="$RECONF_ROWS $nic:$op:$((w1 - w0))"
  if ! matches_plan "$irqs"; then RESULT_OF=FAIL
  elif [ "$expect" = 0 ] && [ $((w1 - w0)) != 0 ]; then RESULT_OF=FAIL REPLY="$REPLY, yet $((w1 - w0)) write(s) where the kernel kept every mask"
  else RESULT_OF=PASS REPLY="$REPLY, $((w1 - w0)) write(s)"
  fi
  DETAIL="$op on $RECONF_IF ($nic), $expect write(s) expected: $REPLY"
}
# reconf_nic NIC IFACE: up; REPLY = its IRQs once the daemon placed them (settled); the NIC's
# IRQ count, and what plan says its driver does across resets (measured).
reconf_nic() {
  RECONF_IF=$2
  ip link set "$2" up
  i=0; while device_irqs "$2"; [ -z "$REPLY" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
  RECONF_NIRQS=$(count "$REPLY"); RECONF_IRQS=$REPLY
  now; T0=$NOW
  settle "$REPLY" true 30000
  plan_rows
  $IRQWISE --config $CFG plan --json 2>/dev/null | awk -v dump=1 -f /guest/planrows.awk > /tmp/plan.dump
  local dev; dev=$(awk -v n="$2" '$1 ~ /^devices\.[0-9]+\.name$/ && $2 == n { sub(/\.name$/, "", $1); print $1; exit }' /tmp/plan.dump)
  measure "${1}_resets" "$(awk -v k="$dev.resets.mask" '$1 == k { print $2 }' /tmp/plan.dump)"
}
# ethtool_max IFACE: REPLY = its pre-set maximum of combined channels.
ethtool_max() { REPLY=$(ethtool -l "$1" 2>/dev/null | awk '/Combined:/ { print $2; exit }'); }
channels_cycle() { # ethtool -L IFACE combined 1, then back to its maximum
  ethtool -L "$1" combined 1 || return 1
  sleep 1
  ethtool_max "$1"; ethtool -L "$1" combined "$REPLY"
}
link_cycle() { ip link set "$1" down && sleep 1 && ip link set "$1" up; }
xdp_cycle() { xdp-pass "$1" on || return 1; sleep 1; xdp-pass "$1" off; }

log_mark
# vmxnet3: keeps its vectors; no `ethtool -L` (EOPNOTSUPP); XDP from 6.6.
reconf_nic vmxnet3 eth0
check vmxnet3_placed "eth0 (vmxnet3): every IRQ placed before its reconfigurations" -- matches_plan "$RECONF_IRQS"
reconf vmxnet3 link 0 link_cycle eth0; result vmxnet3_link $RESULT_OF "$DETAIL"
reconf vmxnet3 xdp 0 xdp_cycle eth0; result vmxnet3_xdp $RESULT_OF "$DETAIL"
reconf vmxnet3 channels 0 channels_cycle eth0; result vmxnet3_channels $RESULT_OF "$DETAIL"

# hot_nic ID MAC DEVICE: device_add of DEVICE (model and backend) on the hot-plug port (node 1);
# HOT_IF = its interface, empty when it never appeared.
hot_nic() {
  echo "HOST device_add $3,id=$1,bus=rphot,mac=$2"
  i=0; while ! iface_with_mac "$2" && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
  HOT_IF=$REPLY
}
# hot_nic_gone ID MAC: device_del, and the wait until the guest let go of the PCI function and
# the slot is free again (a moment later, as 36-netdev-survey.sh waits).
hot_nic_gone() {
  local pci; pci=$(readlink -f /sys/class/net/$HOT_IF/device); [ -e "$pci/config" ] || pci=${pci%/*}
  echo "HOST device_del $1"
  i=0; while { iface_with_mac "$2" || [ -e "$pci/config" ]; } && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
  sleep 2
}

# virtio-net, 4 queue pairs, its multi-queue backend a tap nobody configures.
echo "HOST netdev_add tap,id=vt0,queues=4,script=no,downscript=no,vhost=off"
sleep 1
hot_nic rvirtio 52:54:00:00:00:08 virtio-net-pci,netdev=vt0,mq=on,vectors=10
check virtio_added "virtio-net with 4 queue pairs hot-added (${HOT_IF:-none})" -- [ -n "$HOT_IF" ]
if [ -n "$HOT_IF" ]; then
  reconf_nic virtio_net "$HOT_IF"
  check virtio_placed "$HOT_IF (virtio_net): every IRQ placed before its reconfigurations" -- matches_plan "$RECONF_IRQS"
  reconf virtio_net link 0 link_cycle "$HOT_IF"; result virtio_link $RESULT_OF "$DETAIL"
  reconf virtio_net xdp 0 xdp_cycle "$HOT_IF"; result virtio_xdp $RESULT_OF "$DETAIL"
  # The driver writes its own spread over the queues it changes: irqwise places them again.
  reconf virtio_net channels some channels_cycle "$HOT_IF"; result virtio_channels $RESULT_OF "$DETAIL"
  hot_nic_gone rvirtio 52:54:00:00:00:08
fi
echo "HOST netdev_del vt0"
sleep 1

# e1000e: one queue pair; no `ethtool -L`, no XDP.
hot_nic re1000e 52:54:00:00:00:09 e1000e,netdev=hn0
check e1000e_added "e1000e hot-added (${HOT_IF:-none})" -- [ -n "$HOT_IF" ]
if [ -n "$HOT_IF" ]; then
  reconf_nic e1000e "$HOT_IF"
  check e1000e_placed "$HOT_IF (e1000e): every IRQ placed before its reconfigurations" -- matches_plan "$RECONF_IRQS"
  reconf e1000e link 0 link_cycle "$HOT_IF"; result e1000e_link $RESULT_OF "$DETAIL"
  reconf e1000e xdp 0 xdp_cycle "$HOT_IF"; result e1000e_xdp $RESULT_OF "$DETAIL"
  reconf e1000e channels 0 channels_cycle "$HOT_IF"; result e1000e_channels $RESULT_OF "$DETAIL"
  hot_nic_gone re1000e 52:54:00:00:00:09
fi
sleep 2
measure rows "${RECONF_ROWS# }"
read_masks "$NIC_IRQS"; mask_lists
check eth0_intact "eth0 back at its startup placement" -- [ "$REPLY" = "$STARTUP_LISTS" ]
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
