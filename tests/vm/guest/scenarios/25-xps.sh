# xps: eth0's transmit steering follows its queue IRQs on the real kernel, checked against the
# rule from sysfs alone: every online CPU sends on exactly one tx queue, one whose IRQ is nearest
# to it (same CPU, SMT sibling, cluster, last-level cache, node); each queue's IRQ CPU is in its
# own set unless two queues share that CPU; offline CPUs send on none. After placement, after a
# CPU offline and back online. Then irqbalance's banned list, written while the daemon runs
# (into /etc/default, which does not exist yet), moves the queues off the banned CPU.
SCEN=xps
log_mark

# LLC_<cpu>: the CPUs sharing its last-level cache (the highest-level data or unified cache),
# read while every CPU is online.
for d in /sys/devices/system/cpu/cpu[0-9]*; do
  c=${d##*cpu}; best=-1; list=""
  for x in $d/cache/index[0-9]*; do
    [ -r $x/level ] || continue
    read -r lv < $x/level; read -r ty < $x/type
    case $ty in Data|Unified) [ "$lv" -gt "$best" ] && { best=$lv; read -r list < $x/shared_cpu_list; };; esac
  done
  eval "LLC_$c=\$list"
done

# mask_to_cpus MASK: REPLY = the CPUs of a kernel hex mask ("f0", "00000000,000000f0"), ascending.
mask_to_cpus() {
  local g groups n=0 i=0 v b base out=""
  groups=$(echo "$1" | tr ',' ' ')
  for g in $groups; do n=$((n + 1)); done
  for g in $groups; do
    base=$(((n - 1 - i) * 32)); v=$((0x$g)); b=0
    while [ "$v" -ne 0 ]; do [ $((v & 1)) -eq 1 ] && out="$out $((base + b))"; v=$((v >> 1)); b=$((b + 1)); done
    i=$((i + 1))
  done
  REPLY=$(for c in $out; do echo "$c"; done | sort -n | tr '\n' ' ')
  REPLY=${REPLY% }
}
# near A B: NEAR = how near CPU B is to CPU A: 0 itself, 1 SMT sibling, 2 cluster, 3 LLC, 4 node, 5 other.
near() {
  local l t=/sys/devices/system/cpu/cpu$1/topology na nb
  [ "$1" = "$2" ] && { NEAR=0; return; }
  read -r l < $t/thread_siblings_list; expand "$l"; contains "$REPLY" "$2" && { NEAR=1; return; }
  if [ -r $t/cluster_cpus_list ]; then read -r l < $t/cluster_cpus_list; expand "$l"; contains "$REPLY" "$2" && { NEAR=2; return; }; fi
  eval "l=\$LLC_$1"; expand "$l"; contains "$REPLY" "$2" && { NEAR=3; return; }
  eval "na=\$NODE_$1; nb=\$NODE_$2"
  [ "$na" = "$nb" ] && NEAR=4 || NEAR=5
}
TXQ=$(ls -d /sys/class/net/eth0/queues/tx-* | wc -l)
# xps_table: XPS_TABLE = "tx0:CPUS tx1:CPUS ..." from xps_cpus (CPUS comma-separated, - for none).
xps_table() {
  local q=0 m out=""
  while [ $q -lt "$TXQ" ]; do
    read -r m < /sys/class/net/eth0/queues/tx-$q/xps_cpus; mask_to_cpus "$m"
    out="$out tx$q:$(echo "${REPLY:--}" | tr ' ' ',')"; q=$((q + 1))
  done
  XPS_TABLE=${out# }
}
# xps_rule: the rule above, for eth0's queue IRQs ($NIC_IRQS, queue order) and xps_cpus.
xps_rule() {
  local q=0 irq m c a best owner e
  online_cpus
  [ "$TXQ" -eq "$(count "$NIC_IRQS")" ] || { REPLY="$TXQ tx queues, $(count "$NIC_IRQS") queue IRQs"; return 1; }
  for c in 0 1 2 3 4 5 6 7; do eval "O_$c="; done
  for irq in $NIC_IRQS; do
    read -r m < /proc/irq/$irq/smp_affinity_list
    case $m in *[!0-9]*) REPLY="queue $q's IRQ on $m, not one CPU"; return 1;; esac
    eval "A_$q=$m"
    read -r m < /sys/class/net/eth0/queues/tx-$q/xps_cpus; mask_to_cpus "$m"
    for c in $REPLY; do
      contains "$ONLINE" "$c" || { REPLY="offline CPU $c sends on tx-$q"; return 1; }
      eval "owner=\$O_$c"; [ -z "$owner" ] || { REPLY="CPU $c sends on tx-$owner and tx-$q"; return 1; }
      eval "O_$c=$q"
    done
    q=$((q + 1))
  done
  for c in $ONLINE; do
    eval "owner=\$O_$c"; [ -n "$owner" ] || { REPLY="CPU $c sends on no queue"; return 1; }
    best=9; q=0
    while [ $q -lt "$TXQ" ]; do eval "a=\$A_$q"; near "$c" "$a"; [ $NEAR -lt $best ] && best=$NEAR; q=$((q + 1)); done
    eval "a=\$A_$owner"; near "$c" "$a"
    [ $NEAR -eq $best ] || { REPLY="CPU $c sends on tx-$owner (IRQ on $a, nearness $NEAR), a queue at $best is nearer"; return 1; }
  done
  q=0
  while [ $q -lt "$TXQ" ]; do
    eval "a=\$A_$q"; eval "owner=\$O_$a"
    if [ "$owner" != "$q" ]; then
      e=0; while [ $e -lt "$TXQ" ]; do eval "[ \$A_$e = $a ] && [ $e != $q ]" && break; e=$((e + 1)); done
      [ $e -lt "$TXQ" ] || { REPLY="tx-$q's IRQ CPU $a sends on tx-$owner"; return 1; }
    fi
    q=$((q + 1))
  done
  xps_table; REPLY=$XPS_TABLE
}
# xps_settles TIMEOUT_MS: polls until xps_rule holds (the pass that moved the IRQs writes the
# steering right after them).
xps_settles() {
  local t0
  now; t0=$NOW
  while ! xps_rule; do
    now; [ $((NOW - t0)) -ge "$1" ] && return 1
    usleep 50000
  done
}

check txq "eth0 has one tx queue per queue IRQ" -- [ "$TXQ" -eq "$(count "$NIC_IRQS")" ]
check placed "after placement: every online CPU on its nearest queue" -- xps_settles 10000
xps_table; XPS_STARTUP=$XPS_TABLE; measure startup "$XPS_TABLE"

read_masks "$NIC_IRQS"; BEFORE=$MASKS
OFF=$(echo "$BEFORE" | cut -d' ' -f2); OFF=${OFF#*=}
measure offline_cpu "$OFF"
now; T0=$NOW
echo 0 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" "all_single $OFF" 30000
check offline "CPU $OFF (queue 1) offline: the steering followed the IRQs" -- xps_settles 10000
xps_table; measure offline "$XPS_TABLE"
tx1_follows() {
  local m; read -r m < /proc/irq/$(echo "$NIC_IRQS" | cut -d' ' -f2)/smp_affinity_list
  mask_to_cpus "$(cat /sys/class/net/eth0/queues/tx-1/xps_cpus)"
  contains "$REPLY" "$m" || { REPLY="tx-1 sends from '$REPLY', its IRQ is on $m"; return 1; }
  REPLY="tx-1's IRQ and steering on CPU $m"
}
check offline_tx1 "tx-1's set holds its IRQ's new CPU" -- tx1_follows
echo 1 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
xps_settles 10000
xps_table
check online "CPU $OFF back: the startup steering returns" -- [ "$XPS_TABLE" = "$XPS_STARTUP" ]

# tuned or CRI-O bans queue 2's CPU for irqbalance; /etc/default does not exist yet.
BANNED=$(echo "$BEFORE" | cut -d' ' -f3); BANNED=${BANNED#*=}
measure banned_cpu "$BANNED"
[ -d /etc/default ] && note "/etc/default already exists"
now; T0=$NOW
mkdir -p /etc/default
echo "IRQBALANCE_BANNED_CPULIST=$BANNED" > /etc/default/irqbalance
settle "$NIC_IRQS" "all_single $BANNED" 30000
measure banned_react_ms "$SETTLE_MS"
check banned "no queue IRQ on banned CPU $BANNED" -- [ "$SETTLE_MS" -ge 0 ]
check banned_xps "the steering follows the re-placed IRQs" -- xps_settles 10000
now; T0=$NOW
rm /etc/default/irqbalance
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
measure unbanned_react_ms "$SETTLE_MS"
check unbanned "the list removed: the startup placement returns" -- [ "$SETTLE_MS" -ge 0 ]
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
