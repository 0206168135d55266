# containerd-nri: pods on containerd (issue 62). containerd 2.x from Debian unstable (NRI on by
# its default), runc from Debian 12, driven through CRI as a kubelet would by cri-kubelet
# (tests/vm/guest/cri/kubelet.go: RunPodSandbox of a locally built pause image, host network so
# no CNI, CreateContainer with a cpuset, StartContainer, StopContainer, RemoveContainer,
# StopPodSandbox, RemovePodSandbox); the images were imported with `ctr images import`, no
# registry. irqwise runs as an NRI plugin (`[global] nri = true` in a drop-in): a pod annotated
# irq-load-balancing.crio.io=disable keeps the NIC's queues off its container's CPUs while it
# runs; an unannotated pod is untouched; the claim comes back from the runtime's Synchronize
# after irqwise restarts (its claim files removed while it was down, the masks scrambled); a
# containerd restart loses nothing and the plugin reconnects; `nri_exclusive_cpus = true` claims
# an unannotated container whose cpuset no other container shares, and not one that shares it;
# `kubelet_cpu_manager_state` keeps the queues off the CPUs of the checkpoint's entries. Runs on
# the systemd-sid tier only (host/containerd.sh installs containerd there). Leaves the unit
# running with its normal configuration, containerd stopped, no pod.
SCEN=containerd
now; CTR_T0=$NOW
KUBELET=/usr/local/bin/cri-kubelet
NRI_SOCK=/var/run/nri/nri.sock
NRI_DROPIN=$DROPINS/66-nri.toml
KSTATE=/var/lib/kubelet/cpu_manager_state
ANN=irq-load-balancing.crio.io=disable
{ read -r PAUSE_IMAGE; read -r BUSYBOX_IMAGE; } < /root/cri-images.names

# cri COMMAND ARGS...: one CRI call through cri-kubelet; CRI_T0/CRI_T1 = its start and end
# (ms since boot), CRI_VAL = the id or value it printed; CRI_ERR = its error (false then).
cri() {
  local out rc
  out=$($KUBELET "$@" 2>/tmp/cri.err); rc=$?
  set -- $out
  CRI_T0=${3:-0} CRI_T1=${4:-0}; shift 4 2>/dev/null; CRI_VAL=$*
  CRI_ERR=$(head -c 300 /tmp/cri.err | tr '\n' '|')
  return $rc
}
# pod_up NAME UID CPUS [KEY=VALUE...]: RunPodSandbox, CreateContainer (busybox sleep, cpuset
# CPUS), StartContainer. POD, CID = the ids; START_T0 = StartContainer's start; UP_MS = the three
# calls' durations; false with REPLY naming the failed call.
pod_up() {
  local name=$1 uid=$2 cpus=$3 t_run t_create; shift 3
  POD="" CID=""
  cri runp "$name" "$uid" "$@" || { REPLY="RunPodSandbox $name: $CRI_ERR"; return 1; }
  POD=$CRI_VAL t_run=$((CRI_T1 - CRI_T0))
  cri create "$POD" "$name" "$uid" sleeper "$BUSYBOX_IMAGE" "$cpus" "$@" -- /bin/sleep 3600 ||
    { REPLY="CreateContainer in $name: $CRI_ERR"; return 1; }
  CID=$CRI_VAL t_create=$((CRI_T1 - CRI_T0))
  cri start "$CID" || { REPLY="StartContainer $CID: $CRI_ERR"; return 1; }
  START_T0=$CRI_T0 UP_MS="RunPodSandbox $t_run ms, CreateContainer $t_create ms, StartContainer $((CRI_T1 - CRI_T0)) ms"
}
# pod_down POD [CID]: StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox, back to
# back as the kubelet does when a pod is deleted (without CID: the sandbox's two, StopPodSandbox
# stopping its containers); STOP_T0 = the first call's start; DOWN_MS = each call's duration;
# false with REPLY naming the failed call.
pod_down() {
  local t=""
  [ -n "$1" ] || { REPLY="no pod"; return 1; }
  DOWN_MS=""
  if [ -n "${2:-}" ]; then
    cri stop "$2" || { REPLY="StopContainer $2: $CRI_ERR"; return 1; }
    t=$CRI_T0 DOWN_MS="StopContainer $((CRI_T1 - CRI_T0)) ms"
    cri rm "$2" || { REPLY="RemoveContainer $2: $CRI_ERR"; return 1; }
    DOWN_MS="$DOWN_MS, RemoveContainer $((CRI_T1 - CRI_T0)) ms, "
  fi
  cri stopp "$1" || { REPLY="StopPodSandbox $1: $CRI_ERR"; return 1; }
  STOP_T0=${t:-$CRI_T0} DOWN_MS="${DOWN_MS}StopPodSandbox $((CRI_T1 - CRI_T0)) ms"
  cri rmp "$1" || { REPLY="RemovePodSandbox $1: $CRI_ERR"; return 1; }
  DOWN_MS="$DOWN_MS, RemovePodSandbox $((CRI_T1 - CRI_T0)) ms"
}
# off CPU...: no NIC queue mask in MASKS holds any of the CPUs, each is one CPU.
off() {
  local e c
  all_single || return 1
  for e in $MASKS; do expand "${e#*=}"; for c in "$@"; do contains "$REPLY" "$c" && return 1; done; done
  return 0
}
# nic_cpus_but CPU...: REPLY = the NIC's queue CPUs now (in queue order, each once) but these.
nic_cpus_but() {
  local e out=""
  read_masks "$NIC_IRQS"
  for e in $MASKS; do contains "$* $out" "${e#*=}" || out="$out ${e#*=}"; done
  REPLY=${out# }
}
# same_set LIST LIST: the two kernel cpulists name the same CPUs.
same_set() { local a; expand "$1"; a=$REPLY; expand "$2"; [ "$a" = "$REPLY" ]; }
# nri_claim CPUS: REPLY = "OWNER held=H" of a runtime claim (its file /run/irqwise/claims/nri:...)
# on exactly CPUS in `irqwise claims --json`; false when none is listed.
nri_claim() {
  local row
  row=$($IRQWISE claims --json 2>/dev/null | awk -f /guest/planrows.awk -v dump=1 | awk '
    $1 ~ /^claims\.[0-9]+\.(owner|cpus|held|path)$/ { split($1, p, "."); v[p[2] "." p[3]] = $2; if (p[2] + 0 > n + 0) n = p[2] + 0 }
    END { for (i = 0; i <= n; i++) if (index(v[i ".owner"], "nri:") == 1 || v[i ".path"] ~ /\/nri:[^\/]*$/) print v[i ".owner"], v[i ".cpus"], v[i ".held"] }' |
    while read -r o c h; do same_set "$c" "$1" && { echo "$o held=$h"; break; }; done)
  REPLY=${row:-no runtime claim on $1 in irqwise claims: $($IRQWISE claims 2>&1 | tail -n +2 | tr '\n' '|' | head -c 300)}
  [ -n "$row" ]
}
# held_claim CPUS: nri_claim, and the running daemon holds it.
held_claim() { nri_claim "$1" && case $REPLY in *held=true) ;; *) false;; esac; }
# plugin_connected: containerd's journal since the mark says an irqwise plugin connected.
plugin_connected() { REPLY=$(jsince -u containerd.service | grep -E -m1 'plugin [^ ]*irqwise[^ ]* connected' | sed 's/^\[[^]]*\] [^ ]* //' | cut -c1-200); [ -n "$REPLY" ]; }
# unit_restart: `systemctl restart` of irqwise; UNIT_OK = yes when it then runs. With a
# configuration it refuses (today's irqwise rejects the NRI keys) the drop-in goes and the unit
# runs on its normal configuration, so what follows measures what a pod gets from it.
unit_restart() {
  systemctl restart $UNIT 2>/dev/null
  if [ "$(prop ActiveState)" = active ]; then UNIT_OK=yes; return 0; fi
  UNIT_OK="no: $(prop ActiveState)/$(prop Result); $(journalctl --no-pager -q -o cat -u $UNIT -n 3 | tr '\n' '|' | cut -c1-300)"
  note "irqwise did not start with $(basename $NRI_DROPIN) ($UNIT_OK); running it without the drop-in"
  rm -f $NRI_DROPIN
  systemctl reset-failed $UNIT; systemctl restart $UNIT
  return 1
}
# check_config TEXT: the drop-in TEXT written; CC = irqwise check-config's exit and first lines.
check_config() {
  printf '%s\n' "$1" > $NRI_DROPIN
  $IRQWISE check-config > /tmp/nri-check.out 2>&1; CC_RC=$?
  CC="exit $CC_RC: $(head -c 300 /tmp/nri-check.out | tr '\n' '|')"
  REPLY=$CC; [ $CC_RC = 0 ]
}

# containerd: its own v3 configuration names only the sandbox image (the imported pause);
# everything else, NRI included, is the package's default.
mkdir -p /etc/containerd
printf "version = 3\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = '%s'\n" "$PAUSE_IMAGE" > /etc/containerd/config.toml
jmark
now; T0=$NOW
systemctl start containerd.service; RC=$?
now; measure containerd_start_ms $((NOW - T0))
ctr_runs() {
  local v; v=$(ctr version 2>&1 | awk '/^Server:/ { s = 1 } s && $1 == "Version:" { print $2; exit }')
  REPLY="systemctl start: exit $RC, $(prop containerd.service ActiveState); server version ${v:-?}; runc $(runc --version 2>/dev/null | head -1 | cut -d' ' -f3)"
  [ $RC = 0 ] && [ "$(prop containerd.service ActiveState)" = active ] && case $v in 2.*) true;; *) false;; esac
}
check containerd_runs "containerd 2.x (Debian unstable's) runs under systemd with runc" -- ctr_runs
# nri_default: `containerd config dump` (its configuration in force) has NRI on and the socket
# irqwise's default names, and the socket exists.
nri_default() {
  local sect
  sect=$(containerd config dump 2>/dev/null | awk '/^ *\[/ { s = ($0 ~ /io\.containerd\.nri\.v1\.nri.\]/) } s' | grep -E '^ *(disable|socket_path) ' | tr -s ' ' | tr '\n' ';')
  REPLY="config dump: ${sect:-no nri section}; socket: $(stat -c %F $NRI_SOCK 2>&1)"
  case $sect in *"disable = false"*) ;; *) return 1;; esac
  case $sect in *"socket_path = '$NRI_SOCK'"*|*"socket_path = \"$NRI_SOCK\""*) ;; *) return 1;; esac
  [ -S $NRI_SOCK ]
}
check nri_default "NRI on by containerd's default: config dump says disable = false, socket_path = $NRI_SOCK; the socket exists" -- nri_default
now; T0=$NOW
ctr -n k8s.io images import /root/cri-images.oci.tar > /tmp/ctr-import.out 2>&1; RC=$?
now; measure import_ms $((NOW - T0))
images_in() {
  local l; l=$(ctr -n k8s.io images ls -q 2>&1 | tr '\n' ' ')
  REPLY="ctr images import: exit $RC; k8s.io images: $l"
  [ $RC = 0 ] && contains "$l" "$PAUSE_IMAGE" && contains "$l" "$BUSYBOX_IMAGE"
}
check images "the pause and busybox images built on the host imported (ctr -n k8s.io images import), no registry" -- images_in
cri_ready() { cri version || { REPLY=$CRI_ERR; return 1; }; REPLY="$CRI_VAL (answered in $((CRI_T1 - CRI_T0)) ms)"; case $CRI_VAL in *RuntimeReady=true*) true;; *) false;; esac; }
check cri_ready "CRI Version and Status over containerd's socket: RuntimeReady" -- cri_ready

# irqwise as an NRI plugin: the drop-in checked, the unit restarted with it, containerd's
# journal says the plugin connected.
check config_accepted "irqwise check-config accepts [global] nri = true" -- check_config '[global]
nri = true'
jmark
now; T0=$NOW
unit_restart
plugin_up() { wait_until 15000 plugin_connected; }
plugin_up; CONNECT_MS=$WAITED_MS; CONNECT_SAID=$REPLY   # (measure overwrites REPLY)
[ "$CONNECT_MS" -ge 0 ] || CONNECT_SAID=""
measure nri_connect_ms "$CONNECT_MS"
connected() { REPLY="unit: $UNIT_OK; containerd: ${CONNECT_SAID:-no plugin connected in 15 s}"; [ "$UNIT_OK" = yes ] && [ "$CONNECT_MS" -ge 0 ]; }
check nri_connected "irqwise restarted with nri = true registers with containerd (its journal: plugin connected and synchronized)" -- connected

# Pod A: the annotation, the CPUs of the NIC's first two queues.
read_masks "$NIC_IRQS"; HOST_MASKS=$MASKS
nic_cpus_but; set -- $REPLY; C1=$1 C2=$2
CA=$(printf '%s\n' "$C1" "$C2" | sort -n | paste -sd,)   # as the kubelet writes a cpuset
if pod_up irq-pod uid-irq-a "$CA" "$ANN"; then POD_A=$POD CID_A=$CID UP_OK=yes; else UP_OK=$REPLY; POD_A=$POD CID_A=$CID; fi
T0=$START_T0
settle "$NIC_IRQS" "off $C1 $C2" 15000; CLAIM_MS=$SETTLE_MS
measure start_to_off_ms "$CLAIM_MS"
up_a() { REPLY="${UP_MS:-$UP_OK}; pod $POD_A container $CID_A"; [ "$UP_OK" = yes ]; }
check pod_started "RunPodSandbox (pause, host network), CreateContainer (busybox, cpuset $CA, the annotation), StartContainer" -- up_a
# cgroup_cpuset: the container's cpuset is the one asked for, in its cgroup and for its process.
cgroup_cpuset() {
  local pid cg set allowed
  cri pid "$CID_A" || { REPLY="ContainerStatus: $CRI_ERR"; return 1; }
  pid=$CRI_VAL
  cg=$(sed -n 's/^0:://p' /proc/$pid/cgroup 2>/dev/null)
  read -r set < /sys/fs/cgroup$cg/cpuset.cpus 2>/dev/null
  thread_cpus "$pid"; allowed=$REPLY
  same_set "${set:-none}" "$CA" && same_set "${allowed:-none}" "$CA"; local ok=$?
  REPLY="pid $pid, cgroup $cg: cpuset.cpus ${set:-?}, Cpus_allowed_list ${allowed:-?}"
  return $ok
}
check cgroup_cpuset "the container's cpuset $CA is its cgroup's cpuset.cpus and its process's allowed CPUs" -- cgroup_cpuset
claimed() {
  read_masks "$NIC_IRQS"; local m=$MASKS
  held_claim "$CA" || { REPLY="$REPLY; NIC $m"; return 1; }
  REPLY="$REPLY; NIC off $CA ${CLAIM_MS} ms after StartContainer was called: $m"
  [ "$CLAIM_MS" -ge 0 ]
}
check annotated_claimed "the annotated pod's CPUs $CA claimed (runtime claim held), the NIC's queues off them" -- claimed

# Pod B: no annotation, one CPU the NIC uses now; nothing changes for 3 s.
read_masks "$NIC_IRQS"; MASKS_A=$MASKS
nic_cpus_but "$C1" "$C2"; set -- $REPLY; C3=${1:-$C1}
if pod_up plain-pod uid-plain-b "$C3"; then POD_B=$POD CID_B=$CID UP_B=yes; else UP_B=$REPLY; POD_B=$POD CID_B=$CID; fi
untouched() {
  local i=0
  [ "$UP_B" = yes ] || { REPLY=$UP_B; return 1; }
  while [ $i -lt 30 ]; do
    read_masks "$NIC_IRQS"
    [ "$MASKS" = "$MASKS_A" ] || { REPLY="the NIC moved: $MASKS_A -> $MASKS"; return 1; }
    usleep 100000; i=$((i + 1))
  done
  nri_claim "$C3" && { REPLY="claimed: $REPLY"; return 1; }
  REPLY="pod $POD_B on CPU $C3 (${UP_MS}): NIC unchanged for 3 s, no claim on $C3"
}
check unannotated_untouched "an unannotated pod with cpuset $C3 (nri_exclusive_cpus off): the NIC stays, no claim" -- untouched

# irqwise restarted while the pods run: stopped, its claim files removed and the NIC scrambled;
# started again, only the runtime's Synchronize can give the claim back.
systemctl stop $UNIT
REMOVED=$(ls /run/irqwise/claims 2>/dev/null | grep -c '^nri:')
rm -f /run/irqwise/claims/nri:*
scramble
now; T0=$NOW
systemctl start $UNIT
settle "$NIC_IRQS" "off $C1 $C2" 20000; SYNC_MS=$SETTLE_MS
measure restart_to_off_ms "$SYNC_MS"
synchronized() {
  held_claim "$CA" || { REPLY="$REPLY (claim files removed while stopped: $REMOVED)"; return 1; }
  REPLY="$REPLY; $REMOVED claim file(s) removed while stopped, NIC scrambled; off $CA $SYNC_MS ms after systemctl start: $MASKS"
  [ "$SYNC_MS" -ge 0 ]
}
check sync_rebuilt "irqwise restarted while the pod runs (its claim files removed, the NIC scrambled): the claim rebuilt from Synchronize" -- synchronized

# containerd restarted: the pods keep running, the claim stays held throughout, the plugin
# reconnects (and is synchronized again).
jmark
read_masks "$NIC_IRQS"; BEFORE_RESTART=$MASKS
now; T0=$NOW
systemctl restart containerd.service; RC=$?
now; measure containerd_restart_ms $((NOW - T0))
LOST=""
lost_until_connected() {
  now; read_masks "$NIC_IRQS"; off "$C1" "$C2" || LOST="${LOST:-NIC on $C1/$C2 at +$((NOW - T0)) ms: $MASKS}"
  plugin_connected
}
wait_until 20000 lost_until_connected; RECONNECT_MS=$WAITED_MS; RECONNECT_SAID=$REPLY
[ "$RECONNECT_MS" -ge 0 ] || RECONNECT_SAID=""
measure reconnect_ms "$RECONNECT_MS"
reconnected() {
  local said=${RECONNECT_SAID:-no plugin connected in 20 s}
  REPLY="systemctl restart containerd: exit $RC; $said"
  [ $RC = 0 ] && [ "$RECONNECT_MS" -ge 0 ]
}
check containerd_restart_reconnect "containerd restarted: the irqwise plugin connects again ($RECONNECT_MS ms after the restart returned)" -- reconnected
nothing_lost() {
  local i=0
  while [ $i -lt 20 ]; do read_masks "$NIC_IRQS"; off "$C1" "$C2" || LOST="${LOST:-NIC on $C1/$C2 after the reconnect: $MASKS}"; usleep 100000; i=$((i + 1)); done
  held_claim "$CA" || { REPLY="after the restart: $REPLY"; return 1; }
  [ -z "$LOST" ] || { REPLY=$LOST; return 1; }
  cri pid "$CID_A" || { REPLY="the container is gone after the restart: $CRI_ERR"; return 1; }
  REPLY="container pid $CRI_VAL still runs; claim $REPLY; NIC off $CA throughout (sampled every 50-100 ms)"
}
check containerd_restart_kept "across the containerd restart: the container runs, the claim stays held, the NIC never back on $CA" -- nothing_lost

# Pod A deleted: the NIC comes back as it was before the claim (pod B is not claimed).
pod_down "$POD_A" "$CID_A"; DOWN_A=$?; DOWN_WHY=$REPLY
released() {
  [ $DOWN_A = 0 ] || { REPLY=$DOWN_WHY; return 1; }
  [ "$CLAIM_MS" -ge 0 ] || [ "$SYNC_MS" -ge 0 ] || { REPLY="nothing to release: the pod's CPUs were never claimed"; return 1; }
  T0=$STOP_T0
  settle "$NIC_IRQS" '[ "$MASKS" = "$HOST_MASKS" ]' 30000; RELEASE_MS=$SETTLE_MS
  nri_claim "$CA" && { REPLY="still listed: $REPLY"; return 1; }
  REPLY="$DOWN_MS; NIC back ($MASKS) $RELEASE_MS ms after StopContainer was called"
  [ "$RELEASE_MS" -ge 0 ]
}
check annotated_released "the annotated pod deleted (StopContainer ... RemovePodSandbox): claim gone, the NIC as before it" -- released
measure stop_to_back_ms "${RELEASE_MS:--1}"

# nri_exclusive_cpus: pod B (cpuset $C3, shared with no other container) claimed from
# Synchronize after the restart; pod C, started afterwards with its own CPU, claimed through the
# event; pod D sharing C's CPU: neither is exclusive any more, the claim on it goes.
check exclusive_config "irqwise check-config accepts nri_exclusive_cpus = true" -- check_config '[global]
nri = true
nri_exclusive_cpus = true'
now; T0=$NOW
unit_restart
settle "$NIC_IRQS" "off $C3" 15000; EXCL_SYNC_MS=$SETTLE_MS
excl_sync() {
  [ "$UNIT_OK" = yes ] || { REPLY="unit: $UNIT_OK"; return 1; }
  held_claim "$C3" || return 1
  REPLY="$REPLY; NIC off $C3 $EXCL_SYNC_MS ms after the restart: $MASKS"; [ "$EXCL_SYNC_MS" -ge 0 ]
}
check exclusive_sync "nri_exclusive_cpus: the unannotated pod's exclusive cpuset $C3 claimed after the restart (Synchronize)" -- excl_sync
nic_cpus_but "$C3"; set -- $REPLY; C4=${1:-$C1}
if pod_up excl-pod uid-excl-c "$C4"; then POD_C=$POD CID_C=$CID UP_C=yes; else UP_C=$REPLY; POD_C=$POD CID_C=$CID; fi
T0=$START_T0
settle "$NIC_IRQS" "off $C3 $C4" 15000; EXCL_MS=$SETTLE_MS
measure exclusive_start_to_off_ms "$EXCL_MS"
excl_event() {
  [ "$UP_C" = yes ] || { REPLY=$UP_C; return 1; }
  held_claim "$C4" || return 1
  REPLY="$REPLY; NIC off $C3,$C4 $EXCL_MS ms after StartContainer was called: $MASKS"; [ "$EXCL_MS" -ge 0 ]
}
check exclusive_claimed "nri_exclusive_cpus: an unannotated pod started with cpuset $C4 (no other container on it) claimed" -- excl_event
if pod_up shared-pod uid-shared-d "$C4"; then POD_D=$POD CID_D=$CID UP_D=yes; else UP_D=$REPLY; POD_D=$POD CID_D=$CID; fi
now; T0=$NOW
unshared() { ! nri_claim "$C4"; }
wait_until 15000 unshared; SHARED_MS=$WAITED_MS
excl_shared() {
  [ "$UP_D" = yes ] || { REPLY=$UP_D; return 1; }
  [ "$SHARED_MS" -ge 0 ] || { nri_claim "$C4"; REPLY="still claimed 15 s after a second container took CPU $C4: $REPLY"; return 1; }
  held_claim "$C3" || { REPLY="pod B's claim lost: $REPLY"; return 1; }
  REPLY="no claim on $C4 $SHARED_MS ms after the second container started; $C3 still claimed"
}
check exclusive_shared "a second pod on cpuset $C4: shared, no longer claimed (pod B's $C3 still is)" -- excl_shared
DOWN_ALL=""
# The three pods deleted by StopPodSandbox and RemovePodSandbox alone (the sandbox's stop ends
# its containers: two CRI calls a pod instead of four, some 10 s of TCG time).
now; T0=$NOW
for p in "$POD_B" "$POD_C" "$POD_D"; do
  [ -n "$p" ] || continue
  pod_down "$p" || DOWN_ALL="$DOWN_ALL $REPLY;"
done
settle "$NIC_IRQS" '[ "$MASKS" = "$HOST_MASKS" ]' 30000
excl_back() {
  REPLY="${DOWN_ALL:+$DOWN_ALL }NIC $MASKS $SETTLE_MS ms after the first StopPodSandbox was called (before the pods: $HOST_MASKS)"
  [ "$EXCL_SYNC_MS" -ge 0 ] || [ "$EXCL_MS" -ge 0 ] || { REPLY="nothing to release: no exclusive cpuset was claimed; $REPLY"; return 1; }
  [ -z "$DOWN_ALL" ] && [ "$SETTLE_MS" -ge 0 ]
}
check exclusive_released "the three pods deleted (StopPodSandbox, RemovePodSandbox): the NIC as before the pods" -- excl_back

# The kubelet's checkpoint as a source (NRI off): the static policy's entries, written by hand
# as the kubelet writes it (a temporary file renamed over it), the daemon watching.
KCPUS=$CA
kstate() { # kstate ENTRIES_JSON DEFAULT: the checkpoint, atomically
  mkdir -p ${KSTATE%/*}
  printf '{"policyName":"static","defaultCpuSet":"%s","entries":%s,"checksum":0}\n' "$2" "$1" > $KSTATE.tmp && mv $KSTATE.tmp $KSTATE
}
kstate '{}' 0-7
check kubelet_config "irqwise check-config accepts kubelet_cpu_manager_state = \"$KSTATE\"" -- check_config "[global]
kubelet_cpu_manager_state = \"$KSTATE\""
unit_restart
read_masks "$NIC_IRQS"; K_BEFORE=$MASKS
now; T0=$NOW
online_cpus; KDEFAULT=""; for c in $ONLINE; do contains "$C1 $C2" "$c" || KDEFAULT="$KDEFAULT,$c"; done
kstate "{\"uid-guaranteed\":{\"app\":\"$KCPUS\"}}" "${KDEFAULT#,}"
settle "$NIC_IRQS" "off $C1 $C2" 15000; KSTATE_MS=$SETTLE_MS
measure kubelet_state_to_off_ms "$KSTATE_MS"
kubelet_off() {
  [ "$UNIT_OK" = yes ] || { REPLY="unit: $UNIT_OK; NIC $MASKS"; return 1; }
  REPLY="NIC off $KCPUS $KSTATE_MS ms after the checkpoint was written: $MASKS (before: $K_BEFORE)"
  [ "$KSTATE_MS" -ge 0 ]
}
check kubelet_state "a cpu_manager_state entry (static policy) on $KCPUS: the NIC's queues leave those CPUs" -- kubelet_off
now; T0=$NOW
kstate '{}' 0-7
settle "$NIC_IRQS" '[ "$MASKS" = "$HOST_MASKS" ]' 30000; KBACK_MS=$SETTLE_MS
measure kubelet_state_to_back_ms "$KBACK_MS"
kubelet_back() {
  REPLY="NIC $MASKS $KBACK_MS ms after the entry went"
  [ "$KSTATE_MS" -ge 0 ] || { REPLY="nothing to release: the entry's CPUs were never left; $REPLY"; return 1; }
  [ "$KBACK_MS" -ge 0 ]
}
check kubelet_state_released "the entry removed from the checkpoint: the NIC back" -- kubelet_back

check allowed "no call denied in the daemon's life (journal)" -- daemon_quiet
rm -f $NRI_DROPIN; rm -rf /var/lib/kubelet
systemctl restart $UNIT
systemctl stop containerd.service
ctr_back() {
  REPLY="irqwise $(prop ActiveState), containerd $(prop containerd.service ActiveState); conf.d: $(ls $DROPINS | tr '\n' ' ')"
  [ "$(prop ActiveState)" = active ] && ! [ -e $NRI_DROPIN ] && placed_as_planned
}
check host_back "the unit runs again with its normal configuration, the NIC as planned" -- ctr_back
now; measure scenario_ms $((NOW - CTR_T0))
