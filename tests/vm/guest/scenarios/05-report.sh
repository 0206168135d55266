# report: `irqwise report` while eth0 carries a ping flood, three times: on the kernel's own
# placement before irqwise ever ran, under irqbalance, and under irqwise. The flood goes to the
# guest's own gateway on QEMU's user network (10.0.2.2, answered inside QEMU: nothing leaves
# the host). Every IRQ mask is put back as found at the end, so the scenarios after this one
# start from the boot state; the daemons run here log to their own files.
SCEN=report
R_GW=10.0.2.2
ip addr add 10.0.2.15/24 dev eth0 2>/dev/null
nic_queues eth0; R_IRQS=$QIRQS
all_masks; R_BOOT=$MASKS
read_masks "$R_IRQS"; R_NIC_BOOT=$MASKS

# flood_report TAG: four adaptive pings (`-A`: the next as soon as the reply is in) to the
# gateway during the whole 5 s window of `irqwise report`; the report goes to the guest's output
# (as notes) and, for eth0, to MEASURE lines: its summary line, the rate, the shares on desired
# CPUs and on the NIC's node, the CPUs the queue interrupts fired on, the queue masks. R_ROWS =
# eth0's queue rows ("IRQ EFFECTIVE FIRED-ON"); false when the report failed or eth0 got none.
flood_report() {
  local tag=$1 i pids="" line cpus="" irq name role q rate want eff fired rest
  for i in 1 2 3 4; do ping -A -q -w 8 $R_GW >/dev/null 2>&1 & pids="$pids $!"; done
  usleep 500000
  $IRQWISE --config $CFG report --interval 5s > /tmp/report-$tag.txt 2>/tmp/report-$tag.err
  i=$?
  wait $pids
  [ $i = 0 ] || { REPLY="report exited $i: $(head -c 200 /tmp/report-$tag.err)"; return 1; }
  sed "s/^/# $SCEN $tag: /" /tmp/report-$tag.txt
  line=$(grep '^eth0 (' /tmp/report-$tag.txt)
  [ -n "$line" ] || { REPLY="no eth0 line in the report"; return 1; }
  line="eth0: ${line#*): }"   # without the PCI address and driver, whose ':' would confuse sed
  R_RATE=$(echo "$line" | sed -n 's/^eth0: \([0-9.,]*\) irq\/s.*/\1/p' | tr -d ,)
  R_DESIRED_PCT=$(echo "$line" | sed -n 's/.* \([0-9]*\)% on desired CPUs.*/\1/p')
  R_NODE_PCT=$(echo "$line" | sed -n 's/.* \([0-9]*\)% on node .*/\1/p')
  R_ROWS=""
  while read -r irq name role q rate want eff fired rest; do
    contains "$R_IRQS" "$irq" || continue
    R_ROWS="$R_ROWS $irq:$eff:$fired"
    [ "$fired" = - ] && continue
    expand "$fired"
    for i in $REPLY; do contains "$cpus" "$i" || cpus="$cpus $i"; done
  done < /tmp/report-$tag.txt
  measure ${tag}_line "$line"
  measure ${tag}_rate "${R_RATE:-0}"
  measure ${tag}_desired_pct "${R_DESIRED_PCT:-n/a}"
  measure ${tag}_node_pct "${R_NODE_PCT:-n/a}"
  measure ${tag}_cpus "$(echo $cpus | tr ' ' ',')"
  read_masks "$R_IRQS"; mask_lists; measure ${tag}_masks "$(echo $REPLY | tr ' ' ',')"
  REPLY="$line"
  awk -v r="${R_RATE:-0}" 'BEGIN { exit !(r > 0) }'
}

# effective_as_reported: every eth0 queue IRQ's EFFECTIVE column in the last report equals its
# /proc/irq effective_affinity_list (read after the report).
effective_as_reported() {
  local row irq eff want
  for row in $R_ROWS; do
    irq=${row%%:*}; eff=${row#*:}; eff=${eff%%:*}
    read -r want < /proc/irq/$irq/effective_affinity_list
    [ "$eff" = "$want" ] || { REPLY="irq $irq: report says $eff, /proc/irq $want"; return 1; }
  done
  REPLY="$(count "$R_ROWS") queue IRQs, effective CPUs as in /proc/irq"
}

# put_back: every IRQ's mask as found before this scenario (managed ones refuse: ignored).
put_back() {
  local e
  for e in $R_BOOT; do { echo "${e#*=}" > /proc/irq/${e%%=*}/smp_affinity_list; } 2>/dev/null; done
}

# 1. The kernel's placement: nothing has touched an IRQ since boot.
check kernel_flood "before irqwise: eth0's interrupts measured under the flood" -- flood_report kernel
kernel_default() {
  read_masks "$R_IRQS"
  [ "$MASKS" = "$R_NIC_BOOT" ] || { REPLY="masks changed: $MASKS"; return 1; }
  effective_as_reported kernel
}
check kernel_default "the report shows the kernel's own placement (boot masks, its effective CPUs)" -- kernel_default

# 2. irqbalance (its first balancing pass is at start; it rebalances every 10 s).
IB=/usr/sbin/irqbalance
if [ -x $IB ]; then
  mkdir -p /run/irqbalance
  $IB --foreground > /tmp/irqbalance-report.log 2>&1 &
  R_IB=$!
  sleep 12
  check irqbalance_flood "under irqbalance: eth0's interrupts measured under the flood" -- flood_report irqbalance
  kill $R_IB 2>/dev/null; wait $R_IB 2>/dev/null
else
  result irqbalance_flood FAIL "irqbalance not in the initramfs"
fi
put_back

# 3. irqwise places (its own log: the startup scenario checks the daemon log from its start).
now; T0=$NOW
$IRQWISE --config $CFG --log-format text run 2>/tmp/irqwise-report.log &
R_IW=$!
settle "$R_IRQS" all_single 60000
check irqwise_flood "under irqwise: eth0's interrupts measured under the flood" -- flood_report irqwise
on_desired() {
  [ "$R_DESIRED_PCT" = 100 ] || { REPLY="${R_DESIRED_PCT:-?}% of $R_RATE irq/s on desired CPUs"; return 1; }
  effective_as_reported irqwise || return 1
  REPLY="all of $R_RATE irq/s on the CPUs irqwise placed them on; $REPLY"
}
check irqwise_on_desired "with irqwise placing, 100% of eth0's interrupts on their desired CPUs" -- on_desired
kill -TERM $R_IW 2>/dev/null; wait $R_IW 2>/dev/null

# Back to the boot state for the next scenarios.
put_back
ip addr del 10.0.2.15/24 dev eth0 2>/dev/null
restored() { read_masks "$R_IRQS"; REPLY=$MASKS; [ "$MASKS" = "$R_NIC_BOOT" ]; }
check masks_restored "eth0's masks back as at boot" -- restored
