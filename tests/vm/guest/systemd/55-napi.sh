# napi: the hardened unit lets NAPI threads follow their IRQs (SystemCallFilter= denies
# @resources but allows sched_setaffinity back). Threaded NAPI is switched on with a drop-in that
# sets a 2 s reconcile timer (no event says `threaded` changed); every thread must then be on its
# queue IRQ's CPUs (checked from /proc alone), the moves in the journal, and no call denied.
SCEN=napi
NAPI_IF=$NIC
printf '[global]\nreconcile_interval = "2s"\n' > $DROPINS/55-napi-reconcile.toml
systemctl reload $UNIT
jmark
now; T0=$NOW
echo 1 > /sys/class/net/$NIC/threaded
threads_settle 20000
measure follow_ms "$THREADS_MS"
measure threads "$THREAD_LISTS"
check follow "threaded on: every NAPI thread on its queue IRQ's CPUs, moved from the sandbox (${THREADS_MS} ms)" -- threads_follow
check logged "the moves are in the unit's journal" -- unit_log_has 'thread napi/'
check allowed "no call denied in the daemon's life (journal)" -- daemon_quiet
echo 0 > /sys/class/net/$NIC/threaded
rm -f $DROPINS/55-napi-reconcile.toml
systemctl reload $UNIT
