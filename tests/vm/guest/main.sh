#!/bin/sh
# The guest's test program: prepares the NIC, then runs every scenario file /guest/NN-*.sh in
# order (they share state: the daemon's pid, the startup placement) and dumps the daemon log.
. /guest/lib.sh
load_topology
ip link set eth0 up
SCEN=harness
i=0
while nic_queues eth0; [ "$(count "$QIRQS")" -lt 8 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
check nic_irqs "eth0 has 8 queue IRQs" -- [ "$(count "$QIRQS")" -eq 8 ]
NIC_NODE=$(cat /sys/class/net/eth0/device/numa_node)
NVME_NODE=$(cat /sys/class/nvme/nvme0/device/numa_node)
check device_nodes "NIC on node $NIC_NODE, NVMe on node $NVME_NODE" -- [ "$NIC_NODE" = 1 -a "$NVME_NODE" = 0 ]
measure kernel "$(uname -r)"
for f in /guest/[0-9][0-9]-*.sh; do
  now; T_SCEN=$NOW
  . "$f"
  now; echo "# timing: ${f##*/} $(( (NOW - T_SCEN) / 1000 )) s"
done
SCEN=harness
stop_daemon >/dev/null 2>&1
echo "@@DAEMON_LOG_BEGIN"
cat $DLOG
echo "@@DAEMON_LOG_END"
echo "@@DONE"
