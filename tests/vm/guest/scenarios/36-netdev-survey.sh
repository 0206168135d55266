# netdev-survey: on a kernel with the netdev netlink family (6.3 and later; the 6.12 tier), which
# of QEMU's NICs (vmxnet3, e1000e, e1000, virtio-net-pci) the kernel names the NAPI IRQ of. Each model is hot-added alone on the spare
# root port, brought up, and `irqwise plan --json` says per queue IRQ where its queue index came
# from (`netlink`: the kernel named the IRQ; `name`: its IRQ name). The kernel's raw answers are
# kept by `irqwise snapshot` and printed as CAPTURE lines (hex) for tests/data/netlink/. On a
# kernel without the family (6.1) there is nothing to ask: said, and passed.
SCEN=netdev-survey
SURVEY_MAC=52:54:00:00:00:07
survey_if() { iface_with_mac "$SURVEY_MAC"; SURVEY_IF=$REPLY; [ -n "$REPLY" ]; }
# capture LABEL: the kernel's napi-get and queue-get answers as `irqwise snapshot` keeps them.
capture() {
  local f
  rm -rf /tmp/nsnap
  $IRQWISE --config $CFG snapshot /tmp/nsnap > /dev/null 2>&1 || return 1
  for f in napi-get queue-get; do
    [ -f /tmp/nsnap/irqwise-snapshot/netdev-$f.bin ] || return 1
    echo "CAPTURE $1 $f $(od -An -tx1 -v /tmp/nsnap/irqwise-snapshot/netdev-$f.bin | tr -d ' \n')"
  done
}
# sources_of IFACE: REPLY = "netlink K, name N" over the IRQs of IFACE's PCI function.
sources_of() {
  local d irq s k=0 n=0
  $IRQWISE --config $CFG plan --json > /tmp/survey.json 2>/dev/null || { REPLY="plan failed"; return 1; }
  awk -v cols=irq,queue_source -f /guest/planrows.awk /tmp/survey.json > /tmp/survey.sources
  local dev; dev=$(readlink -f /sys/class/net/$1/device)
  [ -d "$dev/msi_irqs" ] || dev=${dev%/*}   # virtio: the PCI function is the virtio device's parent
  for d in "$dev"/msi_irqs/*; do
    [ -e "$d" ] || continue
    irq=${d##*/}
    s=$(awk -v i="$irq" '$1 == i { print $2 }' /tmp/survey.sources)
    case $s in netlink) k=$((k + 1));; name) n=$((n + 1));; esac
  done
  REPLY="netlink $k, name $n"
}
SURVEYED=""
if $IRQWISE --config $CFG plan 2>/dev/null | grep -q '^note: the kernel.s netdev netlink family'; then
  measure result "no netdev family on $(uname -r): nothing to survey"
  SURVEYED="none (no netdev family)"
else
  capture "$(uname -r)-vmxnet3"
  sources_of eth0; measure vmxnet3 "$REPLY"
  for model in e1000e e1000 virtio-net-pci; do
    echo "HOST device_add $model,id=surv-$model,netdev=hn0,bus=rphot,mac=$SURVEY_MAC"
    i=0; while ! survey_if && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
    SURVEY_PCI=""
    if [ -z "$SURVEY_IF" ]; then
      measure "$model" "did not appear"
    else
      SURVEY_PCI=$(readlink -f /sys/class/net/$SURVEY_IF/device)
      [ -e "$SURVEY_PCI/config" ] || SURVEY_PCI=${SURVEY_PCI%/*}   # virtio: the PCI function is the parent
      ip link set "$SURVEY_IF" up
      sleep 3
      sources_of "$SURVEY_IF"; measure "$model" "$REPLY ($(readlink /sys/class/net/$SURVEY_IF/device/driver | sed 's,.*/,,'))"
      capture "$(uname -r)-$model"
      SURVEYED="$SURVEYED $model"
    fi
    echo "HOST device_del surv-$model"
    # The slot is free once the guest let go of the PCI function (pciehp waits 5 s after the
    # attention button), a moment before QEMU drops the device.
    i=0; while { survey_if || [ -e "$SURVEY_PCI/config" ]; } && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
    measure "${model}_removed" "$([ -e "$SURVEY_PCI/config" ] && echo "no, still in sysfs" || echo yes)"
    sleep 2
  done
fi
surveyed() { REPLY="surveyed: ${SURVEYED# }"; [ -n "$SURVEYED" ]; }
check surveyed "every model hot-added and planned, or no family to ask" -- surveyed
check daemon_alive "daemon still running" -- daemon_alive
