# napi-threads: threaded NAPI on eth0 (vmxnet3, 8 queues). Every NAPI thread must be allowed on
# exactly its queue IRQ's CPUs, checked from /proc alone (threads_follow in lib.sh): once the
# switch is on (no event says so: the next pass, here the reconcile timer at 2 s), after the CPU
# of queue 0 goes offline (the kernel lets the thread run anywhere; irqwise moves it with the
# IRQ) and back online, after another writer moves a thread, after `threaded` goes off and on
# again. Times are from the write to the first poll (20 ms) that saw every thread right. Then
# which source
# told eth0's queues (the kernel's netdev family or the IRQ names) and the notice where the
# kernel cannot be asked.
SCEN=napi-threads
write_config '[global]
reconcile_interval = "2s"'
kill -HUP "$DAEMON_PID"
sleep 1
log_mark
[ -w /sys/class/net/eth0/threaded ] || result start FAIL "no /sys/class/net/eth0/threaded on $(uname -r)"
now; T0=$NOW
echo 1 > /sys/class/net/eth0/threaded
threads_settle 20000
measure start_ms "$THREADS_MS"; measure start_threads "$THREAD_LISTS"
check start "threaded on: every NAPI thread on its queue IRQ's CPUs (${THREADS_MS} ms)" -- threads_follow

read_masks "$NIC_IRQS"; BEFORE=$MASKS
OFF=${BEFORE%% *}; OFF=${OFF#*=}
now; T0=$NOW
echo 0 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" "all_single $OFF" 30000
threads_settle 20000
measure offline_ms "$THREADS_MS"
q0_moved() {
  threads_follow || return 1
  set -- $THREAD_LISTS
  REPLY="queue 0's thread on $1 (CPU $OFF offline)"; [ "$1" != "$OFF" ]
}
check offline "CPU $OFF (queue 0) offline: its thread moved with the IRQ (${THREADS_MS} ms)" -- q0_moved
now; T0=$NOW
echo 1 > /sys/devices/system/cpu/cpu$OFF/online
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
threads_settle 20000
measure online_ms "$THREADS_MS"
check online "CPU $OFF back: the threads follow the IRQs back (${THREADS_MS} ms)" -- threads_follow

# Another writer moves queue 0's thread: the next pass puts it back.
napi_thread_pids eth0; set -- $PIDS
now; T0=$NOW
busybox taskset -p -c 0-7 "$1" > /dev/null
threads_settle 20000
measure drift_ms "$THREADS_MS"
check drift "queue 0's thread moved to 0-7 by someone else: put back (${THREADS_MS} ms)" -- threads_follow

# threaded off and on. 6.1 keeps the threads while it is off (they idle) and reuses them; later
# kernels may end them and start new ones. Either way, while it is off they are moved to every
# CPU here (as a scheduler default), and once it is on again they must follow their IRQs.
napi_thread_pids eth0; OLD_PIDS=$PIDS
echo 0 > /sys/class/net/eth0/threaded
sleep 1
napi_thread_pids eth0
measure toggle_off_threads "$(count "$PIDS")"
for p in $PIDS; do busybox taskset -p -c 0-7 "$p" > /dev/null; done
now; T0=$NOW
echo 1 > /sys/class/net/eth0/threaded
threads_settle 20000
measure toggle_on_ms "$THREADS_MS"
napi_thread_pids eth0
[ "$PIDS" = "$OLD_PIDS" ] && measure toggle_same_pids yes || measure toggle_same_pids no
check toggle_on "threaded off, then on again: the threads follow (${THREADS_MS} ms)" -- threads_follow
log_since_mark | grep -c 'thread napi/eth0-' > /tmp/napi.moves
measure moves_logged "$(cat /tmp/napi.moves)"
check logged "each move logged with its thread, pid and IRQ" -- [ "$(cat /tmp/napi.moves)" -ge 8 ]

# Which source told the queues, as `plan --json` says, and the notice of a kernel without the
# family.
$IRQWISE --config $CFG plan --json > /tmp/plan.json 2>/tmp/plan.err
awk -v cols=irq,queue_source -f /guest/planrows.awk /tmp/plan.json > /tmp/plan.sources
sources() {
  local irq s n=0 k=0 out=""
  for irq in $NIC_IRQS; do
    s=$(awk -v i="$irq" '$1 == i { print $2 }' /tmp/plan.sources)
    case $s in netlink) k=$((k + 1));; name) n=$((n + 1));; *) REPLY="irq $irq: queue_source '$s'"; return 1;; esac
  done
  REPLY="netlink $k, name $n"
}
check identity "every queue IRQ has its source (netlink or name) in plan --json" -- sources
measure identity "$REPLY"
$IRQWISE --config $CFG plan > /tmp/plan.txt 2>&1
NOTE=$(grep -c '^note: the kernel.s netdev netlink family' /tmp/plan.txt)
measure netdev_notice "$(grep '^note: ' /tmp/plan.txt | head -1)"
check notice "at most one notice why the kernel cannot be asked, no warning for it" -- [ "$NOTE" -le 1 ]

echo 0 > /sys/class/net/eth0/threaded
# The kernel may keep the idle threads: leave them where the kernel starts them, for 70-irqbalance.
napi_thread_pids eth0; for p in $PIDS; do busybox taskset -p -c 0-7 "$p" > /dev/null; done
write_config ''
kill -HUP "$DAEMON_PID"
sleep 1
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
