#!/bin/bash
# The systemd tier's guest program, run by guest-test.service once the Debian guest (systemd as
# PID 1, irqwise installed from its .deb, irqbalance installed and enabled) is up. Runs every
# scenario file /guest/NN-*.sh in order (they share state: the NIC, the startup placement), then
# dumps the unit's journal and powers off. Output protocol on ttyS1: lib.sh's RESULT/MEASURE
# lines; one may also say SKIP (a marked placeholder for what does not exist yet: never a pass).
stty -F /dev/ttyS1 raw -echo 2>/dev/null
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
. /guest/lib.sh
IRQWISE=/usr/sbin/irqwise
CFG=/                                   # the system's configuration: /etc/irqwise, conf.d
DROPINS=/etc/irqwise/conf.d
UNIT=irqwise.service
command -v usleep >/dev/null 2>&1 || usleep() { sleep "$(($1 / 1000000)).$(printf '%06d' $(($1 % 1000000)))"; }

# prop [UNIT] PROPERTY: the property's value (systemctl show).
prop() { if [ $# = 1 ]; then systemctl show -p "$1" --value $UNIT; else systemctl show -p "$2" --value "$1"; fi; }
main_pid() { prop MainPID; }
# jmark: remember now; jsince ARGS...: `journalctl ARGS` (short-monotonic: "[seconds] host
# ident[pid]: message") for the entries after the mark. Filtered on the entry's monotonic time
# (the clock /proc/uptime shows in a guest that never suspends), not with --after-cursor: before
# systemd 255, journalctl skips the first entry a filter (-u, IRQ=) matches after the cursor.
jmark() { journalctl --sync 2>/dev/null; read -r JMARK _ < /proc/uptime; }
jsince() {
  journalctl --sync 2>/dev/null
  journalctl --no-pager -q -o short-monotonic "$@" | awk -v m="${JMARK:-0}" '{ t = substr($0, 2, index($0, "]") - 2) + 0; if (t > m) print }'
}
# wait_until LIMIT_MS COMMAND...: polls COMMAND every 50 ms; WAITED_MS = time to success since
# T0 (set by the caller), -1 on timeout (then false).
wait_until() {
  local limit=$1; shift
  while :; do
    if "$@"; then now; WAITED_MS=$((NOW - T0)); return 0; fi
    now; [ $((NOW - T0)) -ge "$limit" ] && { WAITED_MS=-1; return 1; }
    usleep 50000
  done
}
# active_new_pid OLD: the unit is active with a main process other than OLD.
active_new_pid() { local p; p=$(main_pid); [ "$p" != 0 ] && [ "$p" != "$1" ] && [ "$(prop ActiveState)" = active ]; }
# state_has TEXT: the daemon's state file names TEXT as a trigger of its last pass.
state_has() { grep -qF "\"$1\"" /run/irqwise/state.json 2>/dev/null; }
state_passes() { awk -f /guest/planrows.awk -v get=passes /run/irqwise/state.json 2>/dev/null; }
# placed_as_planned [NODE]: the NIC's queue IRQs are where `irqwise plan` (the configuration in
# force) puts them and, from sysfs alone, on NODE (default: the NIC's) with distinct cores first.
placed_as_planned() {
  plan_ok || return 1
  matches_plan "$NIC_IRQS" || return 1
  local why=$REPLY
  read_masks "$NIC_IRQS"; mask_lists
  check_spread "${1:-$NIC_NODE}" "$REPLY" || return 1
  REPLY="$why; $REPLY"
}
# scramble: every NIC queue IRQ on all CPUs (what the kernel gives a new IRQ), so that only a
# new pass of the daemon can put them back.
scramble() { local i; for i in $NIC_IRQS; do echo 0-7 > /proc/irq/$i/smp_affinity_list; done; }
# unit_log_has PATTERN: the unit's journal since the mark matches the extended regex PATTERN
# (REPLY = the first matching line).
unit_log_has() { REPLY=$(jsince -u $UNIT | grep -E -m1 -- "$1" | sed 's/^\[[^]]*\] [^ ]* //'); [ -n "$REPLY" ]; }
# daemon_quiet: the running daemon (MainPID) logged no denied call, read-only path, dropped
# event source or failed notification in its whole life (REPLY = the first such line).
daemon_quiet() {
  journalctl --sync 2>/dev/null
  REPLY=$(journalctl --no-pager -o cat _SYSTEMD_UNIT=$UNIT _PID="$(main_pid)" |
    grep -E -m1 'Operation not permitted|Permission denied|Read-only file system|running without|cannot notify|state file not written')
  [ -z "$REPLY" ]
}
# with_cfg DIR COMMAND...: COMMAND with the harness's --config root set to DIR (65, 67).
with_cfg() { local saved=$CFG rc; CFG=$1; shift; "$@"; rc=$?; CFG=$saved; return $rc; }
nic_up() { nic_queues "$NIC"; [ "$(count "$QIRQS")" -ge 8 ]; }

SCEN=harness
systemd_pid1() { REPLY="$(cat /proc/1/comm), $(systemctl --version | head -1)"; [ "$(cat /proc/1/comm)" = systemd ]; }
check systemd_pid1 "PID 1 is systemd" -- systemd_pid1
measure systemd "$(systemctl --version | head -1 | cut -d' ' -f2)"
measure kernel "$(uname -r)"
measure boot_s "$(cut -d' ' -f1 /proc/uptime)"
no_kill() { REPLY="$(command -v kill || echo 'builtin only'), procps $(dpkg-query -W -f='${Status}' procps 2>/dev/null || echo absent)"; ! [ -e /bin/kill ] && ! [ -e /usr/bin/kill ]; }
check no_bin_kill "a minimal Debian: no /bin/kill (procps absent)" -- no_kill

# After a boot with both balancers enabled, Conflicts= lets exactly one of them run.
IW_BOOT=$(prop ActiveState); IB_BOOT=$(prop irqbalance.service ActiveState)
one_balancer() {
  REPLY="irqwise $IW_BOOT, irqbalance $IB_BOOT"
  [ "$IW_BOOT" = active ] && [ "$IB_BOOT" != active ] || { [ "$IB_BOOT" = active ] && [ "$IW_BOOT" != active ]; }
}
check boot_one_balancer "booted with both enabled: exactly one of irqwise and irqbalance runs" -- one_balancer

# The NIC: whatever name udev gave it; its queue IRQs exist once the link is up.
i=0
while [ -z "$(ls /sys/bus/pci/drivers/vmxnet3/*/net 2>/dev/null)" ] && [ $i -lt 200 ]; do usleep 100000; i=$((i + 1)); done
NIC=$(ls /sys/bus/pci/drivers/vmxnet3/*/net 2>/dev/null | grep -v : | head -1)
load_topology
ip link set "$NIC" up
now; T0=$NOW; wait_until 20000 nic_up
NIC_IRQS=$QIRQS
check nic_irqs "the vmxnet3 NIC ${NIC:-?} has 8 queue IRQs" -- [ "$(count "$NIC_IRQS")" -eq 8 ]
NIC_NODE=$(cat /sys/class/net/$NIC/device/numa_node 2>/dev/null)
NVME_NODE=$(cat /sys/class/nvme/nvme0/device/numa_node 2>/dev/null)
check device_nodes "NIC on node $NIC_NODE, NVMe on node $NVME_NODE" -- [ "$NIC_NODE" = 1 -a "$NVME_NODE" = 0 ]
irqs_named nvme0q; NVME_IO=${REPLY#* }

for f in /guest/[0-9][0-9]-*.sh; do
  now; T_SCEN=$NOW
  . "$f"
  now; echo "# timing: ${f##*/} $(( (NOW - T_SCEN) / 1000 )) s"
done
SCEN=harness
echo "@@JOURNAL_BEGIN"
journalctl --no-pager -o short-monotonic -u $UNIT -u irqbalance.service 2>&1 | tail -400
echo "@@JOURNAL_END"
echo "@@DONE"
systemctl poweroff -f
