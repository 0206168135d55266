# napi-profile: per-NAPI-instance interrupt mitigation (issue 54): the daemon's [napi] profile
# (defer-hard-irqs, gro-flush-timeout, irq-suspend-timeout) written with the netdev family's
# `napi-set` (6.13 and later) onto every NAPI instance of the NICs it places, read back here with
# `napi list` (guest/tools/napi.c, the kernel's napi-get). On eth0 (vmxnet3) and a hot-added
# virtio-net with 4 queue pairs (its multi-queue backend a tap nobody configures, as in
# 38-reconfig.sh; vmxnet3 refuses `ethtool -L`). Each instance must carry the profile after the
# daemon starts, a [[device.napi]] table with `queues` must override its key on those receive
# queues only (reload), the profile must be back on the instances within a few seconds of
# `ethtool -L` (1 queue pair, then 4) and of link down/up, and after SIGTERM (restore_on_exit)
# every instance must hold the values its queue had before the daemon (the daemon keeps them by
# interface and queue, or rank where the driver links no queue: an instance made since by a reset
# gets those of the one it replaced; one of a queue new since, the kernel's defaults), the profile
# having been on them just before: eth0's first instance and the virtio NIC's rxq 2 are given
# their own values with `napi set` beforehand so that the restore is per queue (vmxnet3 makes new
# instances at link up; virtio-net keeps its). Before each
# event every instance is set back to the kernel's defaults with `napi set`, so only a pass
# after the event can show the profile (a kernel that keeps per-queue settings across resets,
# 6.13's persistent NAPI config, would otherwise pass without the daemon). On a kernel without
# napi-set (6.1: no netdev family; 6.12: napi-get without defer-hard-irqs) the same steps run,
# the value rows say so and pass, and the daemon must log one line with `needs 6.13` per
# configuration load (not one per event) and place the IRQs as before. The daemon is restarted with this scenario's configuration and,
# at the end, with the empty one the later scenarios expect.
SCEN=napi-profile
NP_DEFER=3 NP_GRO=50000 NP_SUSPEND=2000000   # [napi]: 3, "50us", "2ms"
NP_QSET="0 1" NP_QDEFER=5                    # [[device.napi]] queues = "0-1", defer_hard_irqs = 5
NP_MAC=52:54:00:00:00:0a
NP_LIMIT=10000                               # ms: an event's pass and its napi-set writes
NP_KERNEL=$(uname -r)
NP_QIF=""                                    # the interface with the per-queue table, once set

# np_holds IFACE...: every active NAPI instance of each IFACE carries the profile in force (the
# per-queue defer on $NP_QIF's receive queues $NP_QSET); REPLY names the first that does not.
# Where the driver links its receive queues to their instances (queue-get's napi-id: virtio-net;
# vmxnet3 does not), an instance no receive queue names (rxq -1) is inactive: a queue pair
# `ethtool -L` took away, whose instance the kernel keeps (6.13's persistent NAPI config): it is
# counted, not checked. Without any link every instance is checked with the global profile.
np_holds() {
  local ifc out bad qd n=0 idle=0
  for ifc in "$@"; do
    out=$(napi list "$ifc" 2>&1) || { REPLY="napi list $ifc: $out"; return 1; }
    [ -n "$out" ] || { REPLY="$ifc has no NAPI instance"; return 1; }
    qd=""; [ "$ifc" = "$NP_QIF" ] && qd=$NP_QDEFER
    bad=$(echo "$out" | awk -v ifc="$ifc" -v d=$NP_DEFER -v g=$NP_GRO -v s=$NP_SUSPEND -v qd="$qd" -v qs=" $NP_QSET " '
      { l[NR] = $0; if ($16 != -1) linked = 1 }
      END {
        for (i = 1; i <= NR; i++) {
          split(l[i], f, " ")
          if (linked && f[16] == -1) { idle++; continue }
          want = d; if (qd != "" && index(qs, " " f[16] " ")) want = qd
          if (f[10] != want || f[12] != g || (f[14] != -1 && f[14] != s)) {
            printf "%s instance %s (rxq %s): defer %s gro %s suspend %s, want %s %s %s", ifc, f[2], f[16], f[10], f[12], f[14], want, g, s; exit }
        }
        if (idle) print "idle " idle }')
    case $bad in "") ;; "idle "*) idle=$((idle + ${bad#idle })) ;; *) REPLY=$bad; return 1;; esac
    n=$((n + $(echo "$out" | wc -l)))
  done
  REPLY="$((n - idle)) active instances of $* carry defer $NP_DEFER gro $NP_GRO suspend $NP_SUSPEND${NP_QIF:+ ($NP_QIF rxq $NP_QSET: defer $NP_QDEFER)}"
  [ $idle = 0 ] || REPLY="$REPLY, $idle inactive"
}
# np_wait NAME IFACE...: polls np_holds every 100 ms from T0 for NP_LIMIT ms; measures NAME_ms
# (-1 on timeout); status of np_holds.
np_wait() {
  local name=$1; shift
  while ! np_holds "$@"; do
    now; [ $((NOW - T0)) -ge $NP_LIMIT ] && { measure "${name}_ms" -1; np_holds "$@"; return 1; }
    usleep 100000
  done
  now; measure "${name}_ms" $((NOW - T0))
  np_holds "$@"
}
# np_zero IFACE...: every instance back to the kernel's defaults (0, 0, 0), so that only a pass
# of the daemon can put the profile on them.
np_zero() {
  local ifc id
  for ifc in "$@"; do
    for id in $(napi list "$ifc" 2>/dev/null | awk '{ print $2 }'); do napi set "$id" defer 0 gro 0 suspend 0 2>/dev/null; done
  done
}
np_note() { local ifc; for ifc in "$@"; do note "$ifc id:rxq:defer/gro/suspend $(napi list "$ifc" 2>&1 | awk '{ printf "%s:q%s:%s/%s/%s ", $2, $16, $10, $12, $14 }')"; done; }
# np_restored IFACE...: every instance present holds the values recorded in /tmp/np.orig.IFACE
# before the daemon started for its slot, as the daemon keeps them: the receive queue it serves,
# else its rank by id among the instances serving none (vmxnet3 links no queue); a slot nobody
# had before holds that interface's untouched values (its last recorded instance's).
np_restored() {
  local ifc bad n=0
  for ifc in "$@"; do
    napi list "$ifc" > /tmp/np.now 2>&1 || { REPLY="napi list $ifc: $(cat /tmp/np.now)"; return 1; }
    sort -n -k2 /tmp/np.now -o /tmp/np.now; sort -n -k2 /tmp/np.orig.$ifc > /tmp/np.was
    bad=$(awk -v ifc="$ifc" 'NR == FNR { s = ($16 != -1) ? "q" $16 : "p" pw++; v[s] = $10 " " $12 " " $14; last = v[s]; next }
      { s = ($16 != -1) ? "q" $16 : "p" pn++; have = $10 " " $12 " " $14; want = (s in v) ? v[s] : last
        if (have != want) { printf "%s instance %s (%s%s): %s, was %s", ifc, $2, s, (s in v) ? "" : ", new", have, want; exit } }' /tmp/np.was /tmp/np.now)
    [ -z "$bad" ] || { REPLY=$bad; return 1; }
    n=$((n + $(wc -l < /tmp/np.now)))
  done
  REPLY="$n instances of $* as before the daemon"
}
np_log_lines() { tail -n +$((NP_LOGMARK + 1)) $DLOG | grep -c 'needs 6\.13'; }

# The virtio-net NIC (as 38-reconfig.sh adds it).
echo "HOST netdev_add tap,id=vt1,queues=4,script=no,downscript=no,vhost=off"
sleep 1
echo "HOST device_add virtio-net-pci,netdev=vt1,mq=on,vectors=10,id=npvirtio,bus=rphot,mac=$NP_MAC"
i=0; while ! iface_with_mac "$NP_MAC" && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
NP_IF=$REPLY
check virtio_added "virtio-net with 4 queue pairs hot-added (${NP_IF:-none})" -- [ -n "$NP_IF" ]
NP_IFS="eth0${NP_IF:+ $NP_IF}"
measure virtio_if "${NP_IF:-none}"
if [ -n "$NP_IF" ]; then
  ip link set "$NP_IF" up
  i=0; while device_irqs "$NP_IF"; [ "$(count "$REPLY")" -lt 9 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
fi
# napi-set is there when napi-get tells defer-hard-irqs (6.13 and later).
NP_SET=0
napi list eth0 > /tmp/np.list 2>&1 && awk '$9 == "defer" && $10 != -1 { ok = 1 } END { exit !ok }' /tmp/np.list && NP_SET=1
measure napi_set "$([ $NP_SET = 1 ] && echo yes || echo "no: $(head -c 100 /tmp/np.list)")"
NP_ETH0_FIRST=""
if [ $NP_SET = 1 ]; then
  for ifc in $NP_IFS; do napi list "$ifc" > /tmp/np.boot.$ifc 2>&1; done
  # eth0's first instance its own values, so that the restore is checked per instance.
  NP_ETH0_FIRST=$(awk '{ print $2; exit }' /tmp/np.list)
  napi set "$NP_ETH0_FIRST" defer 1 gro 20000 > /tmp/np.err 2>&1 || note "napi set $NP_ETH0_FIRST: $(cat /tmp/np.err)"
  # ... and the virtio NIC's rxq 2 (its instances outlive `ethtool -L` and link down/up;
  # vmxnet3 makes new ones at link up).
  [ -n "$NP_IF" ] && napi set "$(napi list "$NP_IF" | awk '$16 == 2 { print $2 }')" defer 2 gro 30000 > /tmp/np.err 2>&1 ||
    note "napi set on $NP_IF rxq 2: $(cat /tmp/np.err)"
  for ifc in $NP_IFS; do napi list "$ifc" > /tmp/np.orig.$ifc 2>&1; done
  np_note $NP_IFS
fi

# start: the daemon started with [napi].
stop_daemon >/dev/null 2>&1
NP_PROFILE="[global]
restore_on_exit = true

[napi]
defer_hard_irqs = $NP_DEFER
gro_flush_timeout = \"50us\"
irq_suspend_timeout = \"2ms\""
write_config "$NP_PROFILE"
log_mark; NP_LOGMARK=$LOGMARK
NP_LOADS=1
now; T0=$NOW
start_daemon
if [ $NP_SET = 1 ]; then
  check start "daemon start: every NAPI instance of $NP_IFS carries [napi]" -- np_wait start $NP_IFS
else
  result start PASS "not on $NP_KERNEL (napi-set came with 6.13)"
fi
settle "$NIC_IRQS" all_single 30000

# per_queue: a [[device.napi]] table for the virtio NIC's receive queues 0-1 (reload).
if [ -n "$NP_IF" ]; then
  write_config "$NP_PROFILE

[[device]]
[device.match]
interface = \"$NP_IF\"
[[device.napi]]
queues = \"0-1\"
defer_hard_irqs = $NP_QDEFER"
  NP_QIF=$NP_IF
  now; T0=$NOW
  kill -HUP "$DAEMON_PID"
  NP_LOADS=2   # a reload says the configuration's warnings anew
fi
if [ $NP_SET = 1 ] && [ -n "$NP_IF" ]; then
  check per_queue "reload: $NP_IF's rxq 0-1 defer $NP_QDEFER, its other queues and eth0 the global profile" -- np_wait per_queue $NP_IFS
else
  sleep 2
  result per_queue PASS "not on $NP_KERNEL$([ -n "$NP_IF" ] || echo ' (no virtio NIC)')"
fi

# ethtool_L: to one queue pair and back to four, each from the kernel's defaults; both steps run
# whatever the first gives, so the NIC ends with its four queue pairs.
np_channels() { # np_channels N: ethtool -L NP_IF combined N, then the wait for the profile
  [ $NP_SET = 1 ] && np_zero "$NP_IF"
  now; T0=$NOW
  ethtool -L "$NP_IF" combined "$1" > /tmp/np.ethtool 2>&1 || { NP_BAD="$NP_BAD; ethtool -L $NP_IF combined $1: $(head -c 120 /tmp/np.ethtool)"; return 1; }
  [ $NP_SET = 1 ] || { sleep 2; return 0; }
  np_wait "ethtool_L$1" "$NP_IF" && NP_GOOD="$NP_GOOD; combined $1: $REPLY" || NP_BAD="$NP_BAD; after combined $1: $REPLY"
  np_note "$NP_IF"
}
np_steps() { REPLY="${NP_BAD#; }"; [ -z "$NP_BAD" ] || return 1; REPLY="${NP_GOOD#; }"; }
if [ -n "$NP_IF" ]; then
  NP_BAD="" NP_GOOD=""; np_channels 1; np_channels 4
  if [ $NP_SET = 1 ]; then
    check ethtool_L "ethtool -L $NP_IF combined 1, then 4: the profile on every instance within $NP_LIMIT ms" -- np_steps
  else
    result ethtool_L PASS "not on $NP_KERNEL"
  fi
else
  result ethtool_L FAIL "no virtio NIC"
fi

# link: down and up, the virtio NIC (its instances kept) and eth0 (vmxnet3 makes new instances at
# link up), each from the kernel's defaults; both run.
np_link() { # np_link IFACE
  [ $NP_SET = 1 ] && np_zero "$1"
  ip link set "$1" down; sleep 1
  now; T0=$NOW
  ip link set "$1" up
  [ $NP_SET = 1 ] || { sleep 2; return 0; }
  np_wait "link_$1" "$1" && NP_GOOD="$NP_GOOD; $1: $REPLY" || NP_BAD="$NP_BAD; after link up of $1: $REPLY"
  np_note "$1"
}
NP_BAD="" NP_GOOD=""
for ifc in $NP_IF eth0; do np_link "$ifc"; done
if [ $NP_SET = 1 ]; then
  check link "link down/up of $NP_IFS: the profile on every instance within $NP_LIMIT ms of the link up" -- np_steps
else
  result link PASS "not on $NP_KERNEL"
fi
i=0; while nic_queues eth0; [ "$(count "$QIRQS")" -lt 8 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
NIC_IRQS=$QIRQS

# needs_6_13: where napi-set is missing, one line says so per configuration load with [napi] (the
# start and the reload; none for the events above), and the IRQs are placed as ever; elsewhere
# no such line.
np_needs() {
  local n; n=$(np_log_lines)
  if [ $NP_SET = 1 ]; then
    REPLY="$n line(s) with 'needs 6.13' on $NP_KERNEL"; [ "$n" = 0 ]; return
  fi
  REPLY="$n line(s) with 'needs 6.13' in $NP_LOADS configuration load(s): $(grep -m1 'needs 6\.13' $DLOG | cut -c1-160)"
  [ "$n" = "$NP_LOADS" ] || return 1
  local why=$REPLY
  plan_rows; matches_plan "$NIC_IRQS" || return 1
  REPLY="$why; eth0 $REPLY"
}
settle "$NIC_IRQS" all_single 30000
check needs_6_13 "without napi-set one daemon line per configuration load says 'needs 6.13' and eth0 is placed as planned; with it none" -- np_needs

# no_errors: the daemon took the configuration and runs, and logged nothing as ERROR/WARN but the
# one 'needs 6.13' line.
np_no_errors() {
  daemon_alive || { REPLY="$REPLY: $(log_since_mark | tail -2 | tr '\n' ' ' | cut -c1-200)"; return 1; }
  REPLY=$(log_since_mark | grep -v 'needs 6\.13' | grep -iE '\b(error|warn(ing)?)\b' | head -3 | tr '\n' '|'); [ -z "$REPLY" ]
}
check no_errors "the daemon runs with [napi]; its log has no ERROR/WARN lines (but 'needs 6.13')" -- np_no_errors

# restored: SIGTERM with restore_on_exit; every instance present as before the daemon.
np_stop() { # the profile must be on the instances first, or the restore would prove nothing
  local on
  np_holds $NP_IFS || { REPLY="before the stop: $REPLY (nothing of the daemon's to restore)"; stop_daemon; return 1; }
  on=$REPLY
  stop_daemon || return 1
  np_restored $NP_IFS || return 1
  REPLY="$REPLY (before the stop: $on)"
}
if [ $NP_SET = 1 ]; then
  check restored "SIGTERM: every NAPI instance of $NP_IFS back at its values from before the daemon" -- np_stop
  np_note $NP_IFS
  # eth0's instances at their boot values whatever the daemon left (later scenarios measure eth0).
  napi list eth0 2>/dev/null | awk 'NR == FNR { v[$2] = $0; last = $0; next }
    { split(($2 in v) ? v[$2] : last, b, " "); print $2, "defer", b[10], "gro", b[12], (b[14] == -1 ? "" : "suspend " b[14]) }' /tmp/np.boot.eth0 - |
    while read -r id kv; do napi set "$id" $kv 2>/dev/null; done
else
  stop_daemon >/dev/null 2>&1
  result restored PASS "not on $NP_KERNEL"
fi

# Back as the later scenarios expect: no virtio NIC, the empty configuration, the daemon running.
if [ -n "$NP_IF" ]; then
  np_pci=$(readlink -f /sys/class/net/$NP_IF/device); [ -e "$np_pci/config" ] || np_pci=${np_pci%/*}
  echo "HOST device_del npvirtio"
  i=0; while { iface_with_mac "$NP_MAC" || [ -e "$np_pci/config" ]; } && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
  sleep 2
fi
echo "HOST netdev_del vt1"
write_config ''
log_mark
start_daemon
settle "$NIC_IRQS" all_single 30000
