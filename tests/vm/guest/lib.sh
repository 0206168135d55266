# Shared helpers of the guest scenarios (busybox ash). Output protocol, one line each, on ttyS1:
#   RESULT <scenario> <check> PASS|FAIL <detail>
#   MEASURE <scenario> <name> <value>
#   HOST <monitor command>        (the host relays it to QEMU's monitor)
# Hot loops use only shell builtins (read, test, arithmetic) so polling costs no fork.

IRQWISE=/usr/bin/irqwise
CFG=/cfg                       # --config root: /cfg/etc/irqwise/irqwise.toml
DLOG=/tmp/irqwise.log          # the daemon's stderr
QUIET_MS=1500                  # masks must stay unchanged this long to count as settled
IDLE_S=60                      # the idle-cost window (the host may override: /etc/vm-idle-s)
[ -r /etc/vm-idle-s ] && read -r IDLE_S < /etc/vm-idle-s
STORM_CYCLES=200               # CPU offline/online cycles of the storm (host: /etc/vm-storm-cycles)
[ -r /etc/vm-storm-cycles ] && read -r STORM_CYCLES < /etc/vm-storm-cycles
SCEN=none

result() { # result CHECK PASS|FAIL DETAIL...
  local c=$1 r=$2; shift 2
  echo "RESULT $SCEN $c $r $*"
}
check() { # check CHECK DETAIL -- COMMAND...: PASS when COMMAND succeeds; COMMAND may explain in REPLY
  local c=$1 d=$2; shift 3
  REPLY=""
  if "$@"; then result "$c" PASS "$d${REPLY:+: $REPLY}"; else result "$c" FAIL "$d${REPLY:+: $REPLY}"; fi
}
measure() { echo "MEASURE $SCEN $1 $2"; }
note() { echo "# $SCEN: $*"; }

now() { # NOW = milliseconds since boot (CLOCK_BOOTTIME via /proc/uptime, 10 ms resolution)
  local up s c
  read -r up _ < /proc/uptime
  s=${up%.*}; c=${up#*.}; c=${c#0}
  NOW=$((s * 1000 + c * 10))
}

# expand LIST: REPLY = the kernel cpulist LIST ("0-2,5") as space-separated CPU numbers.
expand() {
  local IFS=, part a b out=""
  for part in $1; do
    case $part in
      *-*) a=${part%-*}; b=${part#*-}; while [ "$a" -le "$b" ]; do out="$out $a"; a=$((a + 1)); done;;
      "") ;;
      *) out="$out $part";;
    esac
  done
  REPLY=${out# }
}
count() { set -- $1; echo $#; }
contains() { case " $1 " in *" $2 "*) return 0;; esac; return 1; }

# Topology, read once from sysfs while every CPU is online (an offline CPU loses its
# topology directory): NODE_<cpu> and CORE_<cpu> ("package:core_id").
load_topology() {
  local d c n
  for d in /sys/devices/system/node/node[0-9]*; do
    n=${d##*node}
    expand "$(cat "$d/cpulist")"   # a binary sysfs attribute: read(1) byte-wise sees nothing
    for c in $REPLY; do eval "NODE_$c=$n"; done
  done
  for d in /sys/devices/system/cpu/cpu[0-9]*; do
    c=${d##*cpu}
    read -r p < "$d/topology/physical_package_id"; read -r k < "$d/topology/core_id"
    eval "CORE_$c=$p:$k"
  done
}
online_cpus() { local l; read -r l < /sys/devices/system/cpu/online; expand "$l"; ONLINE=$REPLY; }

# nic_queues IFACE: QIRQS = the IFACE-rxtx-N IRQs ordered by N (from /proc/interrupts).
nic_queues() {
  local line irq name q i out=""
  QIRQS=""
  i=0
  while [ $i -lt 64 ]; do eval "Q_$i="; i=$((i + 1)); done
  while read -r line; do
    name=${line##* }
    case $name in "$1"-rxtx-*) q=${name##*-}; irq=${line%%:*}; eval "Q_$q=$irq";; esac
  done < /proc/interrupts
  i=0
  while [ $i -lt 64 ]; do eval "irq=\$Q_$i"; [ -n "$irq" ] && out="$out $irq"; i=$((i + 1)); done
  QIRQS=${out# }
}
# irqs_named PREFIX: REPLY = IRQs whose /proc/interrupts name starts with PREFIX, in file order.
irqs_named() {
  local line out=""
  while read -r line; do
    case ${line##* } in "$1"*) out="$out ${line%%:*}";; esac
  done < /proc/interrupts
  REPLY=${out# }
}

# read_masks IRQS: MASKS = "irq=list irq=list ..." from smp_affinity_list.
read_masks() {
  local i m out=""
  for i in $1; do m=gone; read -r m < /proc/irq/$i/smp_affinity_list 2>/dev/null; out="$out $i=$m"; done
  MASKS=${out# }
}
# mask_cpus: REPLY = the CPU lists of MASKS, in order, space-separated ("4 6 5-7").
mask_lists() { local e out=""; for e in $MASKS; do out="$out ${e#*=}"; done; REPLY=${out# }; }

# all_single [NOTCPU]: every mask in MASKS is one CPU (not the kernel's multi-CPU default or
# fallback), and none is NOTCPU.
all_single() {
  local e m
  for e in $MASKS; do
    m=${e#*=}
    case $m in *[!0-9]*|"") return 1;; esac
    [ -n "${1:-}" ] && [ "$m" = "$1" ] && return 1
  done
  return 0
}

# settle IRQS COND TIMEOUT_MS: from T0 (set by the caller just before acting), polls the masks of
# IRQS every 10 ms until COND (a command judging $MASKS) holds and the masks have not changed for
# QUIET_MS. SETTLE_MS = when the final masks were first seen, relative to T0; -1 on timeout.
settle() {
  local irqs=$1 cond=$2 limit=$3 last="" since=0
  while :; do
    now; read_masks "$irqs"
    if [ "$MASKS" != "$last" ]; then last=$MASKS; since=$NOW; fi
    if eval "$cond" && [ $((NOW - since)) -ge $QUIET_MS ]; then SETTLE_MS=$((since - T0)); return 0; fi
    if [ $((NOW - T0)) -ge "$limit" ]; then SETTLE_MS=-1; return 1; fi
    usleep 10000
  done
}

# check_spread NODE MASKLISTS: irqwise's NIC rule checked from sysfs alone, for queue masks in
# queue order: each mask is one online CPU; the first min(q, CPUs of NODE) queues are on NODE;
# the first min(q, cores of NODE) are on distinct cores; the first min(q, online CPUs) are on
# distinct CPUs. REPLY explains a failure.
check_spread() {
  local node=$1 lists=$2 q i c cpus="" cores="" nodecpus=0 nodecores="" n
  online_cpus
  for c in $ONLINE; do
    eval "n=\$NODE_$c"; [ "$n" = "$node" ] || continue
    nodecpus=$((nodecpus + 1)); eval "k=\$CORE_$c"; contains "$nodecores" "$k" || nodecores="$nodecores $k"
  done
  [ $nodecpus -gt 0 ] || { REPLY="node $node has no online CPU"; return 1; }
  q=$(count "$lists"); i=0
  for c in $lists; do
    case $c in *[!0-9]*) REPLY="queue $i mask $c is not one CPU"; return 1;; esac
    contains "$ONLINE" "$c" || { REPLY="queue $i on offline CPU $c"; return 1; }
    eval "n=\$NODE_$c"; eval "k=\$CORE_$c"
    if [ $i -lt $nodecpus ] && [ "$n" != "$node" ]; then REPLY="queue $i on CPU $c of node $n, not $node"; return 1; fi
    if [ $i -lt $(count "$nodecores") ] && contains "$cores" "$k"; then REPLY="queue $i shares core $k"; return 1; fi
    if contains "$cpus" "$c"; then
      [ $i -lt $(count "$ONLINE") ] && { REPLY="queue $i shares CPU $c"; return 1; }
    fi
    cpus="$cpus $c"; cores="$cores $k"; i=$((i + 1))
  done
  REPLY="$q queues on CPUs$cpus"
  return 0
}

# plan_rows: /tmp/plan.rows = `irqwise plan --json` as rows (see planrows.awk); status of plan.
plan_rows() {
  : > /tmp/plan.rows
  $IRQWISE --config $CFG plan --json > /tmp/plan.json 2>/tmp/plan.err || return 1
  awk -f /guest/planrows.awk /tmp/plan.json > /tmp/plan.rows
}
plan_ok() {
  plan_rows || { REPLY=$(head -c 200 /tmp/plan.err); return 1; }
  [ -s /tmp/plan.rows ] || { REPLY="the plan lists no IRQ"; return 1; }
}
# plan_field IRQ COLUMN: REPLY = that column of IRQ's plan row (2 action, 3 managed, 4 desired),
# from the rows file $ROWS (default /tmp/plan.rows).
plan_field() {
  local irq a m d c b dr n name
  REPLY=""
  while read -r irq a m d c b dr n name; do
    [ "$irq" = "$1" ] || continue
    case $2 in 2) REPLY=$a;; 3) REPLY=$m;; 4) REPLY=$d;; 5) REPLY=$c;; esac
    return 0
  done < "${ROWS:-/tmp/plan.rows}"
  return 1
}
# matches_plan IRQS: every IRQ's current mask equals the plan's desired set and its action is
# keep or managed.
matches_plan() {
  local i e want act
  read_masks "$1"
  for e in $MASKS; do
    i=${e%%=*}; expand "${e#*=}"; local have=$REPLY
    plan_field "$i" 4 || { REPLY="irq $i not in plan"; return 1; }
    want=$(echo "$REPLY" | tr , ' ')
    plan_field "$i" 2; act=$REPLY
    [ "$have" = "$want" ] || { REPLY="irq $i at $have, plan wants $want"; return 1; }
    case $act in keep|managed) ;; *) REPLY="irq $i action $act"; return 1;; esac
  done
  REPLY="$(count "$1") IRQs as planned"
  return 0
}

# Daemon control. The daemon is `irqwise run` with its log on $DLOG.
# Until `irqwise run` exists the suite falls back to `irqwise apply` every 200 ms (reported as a
# FAIL of harness/daemon_run, so a green run always means the real daemon was tested).
start_daemon() {
  : >> $DLOG
  if $IRQWISE run --help >/dev/null 2>&1; then
    DAEMON_KIND=run
    $IRQWISE --config $CFG --log-format text run 2>>$DLOG &
  else
    DAEMON_KIND=apply-loop
    ( trap '' HUP; while :; do $IRQWISE --config $CFG apply >/dev/null 2>>$DLOG; usleep 200000; done ) &
  fi
  DAEMON_PID=$!
}
stop_daemon() {
  [ -n "${DAEMON_PID:-}" ] || return 0
  kill -TERM "$DAEMON_PID" 2>/dev/null
  local i=0
  while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 100 ]; do usleep 50000; i=$((i + 1)); done
  kill -0 "$DAEMON_PID" 2>/dev/null && { kill -KILL "$DAEMON_PID"; REPLY="daemon ignored SIGTERM for 5 s"; return 1; }
  DAEMON_PID=""
  return 0
}
daemon_alive() { kill -0 "$DAEMON_PID" 2>/dev/null || { REPLY="daemon (pid $DAEMON_PID) exited"; return 1; }; }
log_mark() { LOGMARK=$(wc -l < $DLOG); }
log_since_mark() { tail -n +$((LOGMARK + 1)) $DLOG; }
# log_problems: REPLY = ERROR/WARN lines logged since the mark (empty when none).
log_problems() { REPLY=$(log_since_mark | grep -iE '\b(error|warn(ing)?)\b' | head -3 | tr '\n' '|'); }
no_log_problems() { log_problems; [ -z "$REPLY" ]; }

# all_masks: MASKS for every IRQ in /proc/irq (the whole machine's placement).
all_masks() {
  local d out=""
  for d in /proc/irq/[0-9]*; do out="$out ${d##*/}"; done
  read_masks "${out# }"
}
# same_masks OLD NEW EXCLUDE: REPLY = the IRQs (outside EXCLUDE) present in both mask lists
# whose masks differ ("irq N now LIST", four words each); true when there is none.
same_masks() {
  local e i m out=""
  for e in $2; do
    i=${e%%=*}; m=${e#*=}
    contains "$3" "$i" && continue
    case " $1 " in *" $i="*) ;; *) continue;; esac
    case " $1 " in *" $i=$m "*) ;; *) out="$out irq $i now $m"; esac
  done
  REPLY=${out# }
  [ -z "$REPLY" ]
}

write_config() { # write_config TEXT: the daemon's main config file
  printf '%s\n' "$1" > $CFG/etc/irqwise/irqwise.toml
}

# placement_metrics IRQS NODE: MEASURE lines for the comparison table, from sysfs alone:
# node_share = queues whose smp_affinity_list lies within NODE's CPUs / queues;
# distinct_cores = cores of the CPUs the queues are actually delivered to (effective affinity);
# masks = the smp_affinity_list of each queue, in queue order.
placement_metrics() {
  local i m c n on=0 q=0 cores="" lists="" k inside
  for i in $1; do
    q=$((q + 1))
    read -r m < /proc/irq/$i/smp_affinity_list; lists="$lists,$m"
    expand "$m"; inside=1
    for c in $REPLY; do eval "n=\$NODE_$c"; [ "$n" = "$2" ] || inside=0; done
    on=$((on + inside))
    read -r m < /proc/irq/$i/effective_affinity_list; expand "$m"
    for c in $REPLY; do eval "k=\$CORE_$c"; contains "$cores" "$k" || cores="$cores $k"; done
  done
  measure node_share "$on/$q"
  measure distinct_cores "$(count "$cores")"
  measure masks "${lists#,}"
}

# off_and_not_fallback CPU: no mask in MASKS contains CPU, and none is the kernel's fallback
# (every online CPU), i.e. the balancer has repaired what the CPU's removal broke.
off_and_not_fallback() {
  local e
  online_cpus
  for e in $MASKS; do
    expand "${e#*=}"
    contains "$REPLY" "$1" && return 1
    [ "$REPLY" = "$ONLINE" ] && return 1
  done
  return 0
}

# Idle cost. proc_sample PID: S_VOL / S_INV = voluntary / involuntary context switches summed
# over PID's threads (/proc/PID/task/*/status; the process's own status counts its main thread
# only), S_CPU = utime + stime of the whole process in clock ticks (/proc/PID/stat fields 14
# and 15; USER_HZ is 100 on x86), S_RSS = VmRSS in kB (S_ANON: its anonymous part, RssAnon;
# S_FILE: its file-backed part, RssFile + RssShmem: the guest's files live in a tmpfs, whose
# pages count as shared memory), S_THREADS = thread count. Reads only
# /proc, so sampling never wakes the process. False when PID is gone.
proc_sample() {
  local t k v rest line
  S_VOL=0; S_INV=0; S_THREADS=0; S_RSS=""; S_ANON=""; S_FILE=""
  [ -d /proc/$1/task ] || return 1
  for t in /proc/$1/task/[0-9]*; do
    S_THREADS=$((S_THREADS + 1))
    while read -r k v rest; do
      case $k in
        voluntary_ctxt_switches:) S_VOL=$((S_VOL + v));;
        nonvoluntary_ctxt_switches:) S_INV=$((S_INV + v));;
      esac
    done < $t/status
  done
  while read -r k v rest; do
    case $k in VmRSS:) S_RSS=$v;; RssAnon:) S_ANON=$v;; RssFile:|RssShmem:) S_FILE=$((${S_FILE:-0} + v));; esac
  done < /proc/$1/status
  read -r line < /proc/$1/stat || return 1
  set -- ${line##*) }          # from field 3 (state) on: utime is field 14, stime field 15
  S_CPU=$((${12} + ${13}))
}

# rss_mappings PID: a note of PID's resident kB per mapped file (anonymous mappings as [anon]),
# the larger ones (64 kB or more), from /proc/PID/smaps: where VmRSS lives.
rss_mappings() {
  note "rss of pid $1 by mapping: $(awk '/^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "") ? "[anon]" : $6 }
    /^Rss:/ { kb[name] += $2 } END { for (n in kb) if (kb[n] >= 64) printf "%s=%s ", n, kb[n] }' /proc/$1/smaps 2>/dev/null)"
}

# idle_cost PID SECONDS: samples PID at the start and end of a window of SECONDS in which the
# caller changes nothing, and prints MEASURE idle_s (the window by /proc/uptime), idle_voluntary,
# idle_involuntary (context switches in the window, all threads), idle_cpu_ms (utime+stime),
# idle_rss_kb (VmRSS at the end; IDLE_RSS0 at the start), idle_rss_split (its anonymous and
# file-backed parts at the end: heap and stacks; the binary's and libraries' pages), idle_threads, idle_mask_changes (IRQs
# whose smp_affinity_list differs between start and end, all IRQs). IDLE_CHANGED = those IRQs;
# false when PID died.
idle_cost() {
  local pid=$1 v0 i0 c0 t0 m0
  all_masks; m0=$MASKS
  proc_sample "$pid" || { REPLY="pid $pid gone before the window"; return 1; }
  v0=$S_VOL; i0=$S_INV; c0=$S_CPU; IDLE_RSS0=$S_RSS
  now; t0=$NOW
  sleep "$2"
  proc_sample "$pid" || { REPLY="pid $pid died in the window"; return 1; }
  now
  all_masks; same_masks "$m0" "$MASKS" ""; IDLE_CHANGED=$REPLY
  measure idle_s "$(((NOW - t0 + 50) / 1000))"
  measure idle_voluntary $((S_VOL - v0))
  measure idle_involuntary $((S_INV - i0))
  measure idle_cpu_ms $(((S_CPU - c0) * 10))
  measure idle_rss_kb "$S_RSS"
  measure idle_rss0_kb "$IDLE_RSS0"
  measure idle_rss_split "$S_ANON kB anonymous, $S_FILE kB file-backed"
  rss_mappings "$pid"
  measure idle_threads "$S_THREADS"
  if [ -z "$IDLE_CHANGED" ]; then measure idle_mask_changes 0; else measure idle_mask_changes "$(($(count "$IDLE_CHANGED") / 4))"; fi
}

# moved_only OLD NEW CPU: every IRQ whose mask differs between the mask lists OLD and NEW was on
# CPU alone in OLD, and every IRQ that was on CPU alone moved (a CPU offline moves only what
# lived on it). REPLY says what moved or what should not have.
moved_only() {
  local e i m was moved="" wrong=""
  for e in $2; do
    i=${e%%=*}; m=${e#*=}
    case " $1 " in *" $i="*) was=" $1 "; was=${was#*" $i="}; was=${was%% *};; *) continue;; esac
    [ "$m" = "$was" ] && { [ "$was" = "$3" ] && wrong="$wrong irq $i stayed on $3"; continue; }
    if [ "$was" = "$3" ]; then moved="$moved $i:$was>$m"; else wrong="$wrong irq $i $was>$m"; fi
  done
  case " $1" in *"=$3 "*|*"=$3") [ -n "$moved" ] || wrong="$wrong nothing moved off $3";; esac
  REPLY="moved:${moved:- none}${wrong:+; should not have:$wrong}"
  [ -z "$wrong" ]
}
# log_writes: REPLY = how many IRQ writes the daemon logged since the mark.
log_writes() { REPLY=$(log_since_mark | grep -cE 'irq [0-9]+ \(.*\) of .*: .* -> '); }
# cpu_load IRQS: REPLY = "cpu:n ..." queues per CPU by effective affinity; LOAD_SPREAD = max - min
# over the online CPUs.
cpu_load() {
  local i m c n out="" max=0 min=99999
  online_cpus
  for c in $ONLINE; do eval "L_$c=0"; done
  for i in $1; do
    read -r m < /proc/irq/$i/effective_affinity_list; expand "$m"
    for c in $REPLY; do eval "L_$c=\$((L_$c + 1))"; done
  done
  for c in $ONLINE; do
    eval "n=\$L_$c"; out="$out $c:$n"
    [ "$n" -gt "$max" ] && max=$n; [ "$n" -lt "$min" ] && min=$n
  done
  LOAD_SPREAD=$((max - min)); REPLY=${out# }
}

# iface_with_mac MAC: REPLY = the network interface with that MAC address; false when none has it.
iface_with_mac() {
  local d a
  REPLY=""
  for d in /sys/class/net/*; do
    read -r a < "$d/address" 2>/dev/null && [ "$a" = "$1" ] && REPLY=${d##*/}
  done
  [ -n "$REPLY" ]
}

# cpu_storm CPU CYCLES: CYCLES offline/online writes of CPU back to back, as fast as the guest
# takes them (shell builtins only). STORM_MS = the storm's duration, STORM_FAILS = writes that
# failed; the CPU is online again afterwards (false when it could not be brought back).
cpu_storm() {
  local f=/sys/devices/system/cpu/cpu$1/online i=0 fails=0 t0 on
  now; t0=$NOW
  while [ $i -lt "$2" ]; do
    echo 0 2>/dev/null > $f || fails=$((fails + 1))
    echo 1 2>/dev/null > $f || fails=$((fails + 1))
    i=$((i + 1))
  done
  now; STORM_MS=$((NOW - t0)); STORM_FAILS=$fails
  read -r on < $f; [ "$on" = 1 ] || { echo 1 2>/dev/null > $f; read -r on < $f; }
  [ "$on" = 1 ]
}

# NAPI threads. napi_thread_pids IFACE: PIDS = the pids of IFACE's NAPI threads (`napi/IFACE-ID`)
# ordered by NAPI id. vmxnet3 adds one NAPI instance per receive queue, in queue order, and the
# kernel numbers instances in the order they are added: the i-th pid is queue i's thread.
napi_thread_pids() {
  local d c out=""
  for d in /proc/[0-9]*; do
    c=""; read -r c < $d/comm 2>/dev/null
    case $c in "napi/$1-"*) out="$out
${c##*-} ${d#/proc/}";; esac
  done
  PIDS=$(echo "$out" | sort -n | awk 'NF == 2 { print $2 }' | tr '\n' ' '); PIDS=${PIDS% }
}
# thread_cpus PID: REPLY = its Cpus_allowed_list.
thread_cpus() { REPLY=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$1/status 2>/dev/null); }
# threads_follow: every NAPI thread of $NAPI_IF (default eth0) is allowed on exactly its queue
# IRQ's mask ($NIC_IRQS, queue order), checked from /proc alone. THREAD_LISTS = the threads'
# lists in queue order.
threads_follow() {
  local q=0 pid irq m out=""
  napi_thread_pids "${NAPI_IF:-eth0}"
  THREAD_LISTS=""
  [ -n "$PIDS" ] && [ "$(count "$PIDS")" -eq "$(count "$NIC_IRQS")" ] ||
    { REPLY="$(count "$PIDS") NAPI threads for $(count "$NIC_IRQS") queue IRQs"; return 1; }
  set -- $NIC_IRQS
  for pid in $PIDS; do
    irq=$1; shift
    read -r m < /proc/irq/$irq/smp_affinity_list
    thread_cpus "$pid"; out="$out $REPLY"
    [ "$REPLY" = "$m" ] || { THREAD_LISTS=${out# }; REPLY="queue $q: thread $pid allowed on '$REPLY', irq $irq on $m"; return 1; }
    q=$((q + 1))
  done
  THREAD_LISTS=${out# }; REPLY="threads on $THREAD_LISTS"
}
# threads_settle TIMEOUT_MS: polls every 20 ms from T0 until threads_follow holds; THREADS_MS =
# when it first held, relative to T0; -1 on timeout.
threads_settle() {
  while ! threads_follow; do
    now; [ $((NOW - T0)) -ge "$1" ] && { THREADS_MS=-1; return 1; }
    usleep 20000
  done
  now; THREADS_MS=$((NOW - T0))
}

# status_field KEY: one value of the running daemon's `irqwise status --json` (dotted path:
# counters.writes.written), or nothing.
status_field() { $IRQWISE status --json 2>/dev/null | awk -v get="$1" -f /guest/planrows.awk; }
# writes_so_far: REPLY = the mask writes the daemon made so far (written and widened).
writes_so_far() {
  local w f
  w=$(status_field counters.writes.written); f=$(status_field counters.writes.written_fallback)
  REPLY=$((${w:-0} + ${f:-0}))
}
# device_irqs IFACE: REPLY = every MSI IRQ of IFACE's PCI function (a virtio NIC's function is
# its virtio device's parent), in number order.
device_irqs() {
  local dev d out=""
  dev=$(readlink -f /sys/class/net/$1/device)
  [ -d "$dev/msi_irqs" ] || dev=${dev%/*}
  for d in "$dev"/msi_irqs/*; do [ -e "$d" ] && out="$out ${d##*/}"; done
  REPLY=$(echo $out | tr ' ' '\n' | sort -n | tr '\n' ' '); REPLY=${REPLY% }
}
