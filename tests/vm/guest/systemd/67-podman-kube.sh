# podman-kube: `podman kube play` of the shipped manifest (packaging/kubernetes/irqwise-
# daemonset.yaml, unchanged but for `image:` when the loaded image's tag differs, as its header
# tells a user), issue 62. podman plays a DaemonSet from 4.7 on: this is Debian unstable's podman
# (host/podman.sh installs it over the Debian 12 root's 4.3, with the libc and libraries it
# needs, and crun), with Debian 12's conmon. The unit is stopped first (restore_on_exit for that
# stop, so the masks before the pod are the machine's own); the pod must run its daemon, which
# places the NIC as `irqwise plan` with the ConfigMap's drop-in says; the drop-in must be mounted
# from the manifest's ConfigMap and read (`check-config` in the pod), and be in effect:
# restore_on_exit (off by default) puts the masks back at `podman kube down`. Runs on the
# systemd-sid tier only. Leaves the unit running with its normal configuration, no pod (the
# image stays).
SCEN=podman-kube
now; KUBE_T0=$NOW
OCI=/root/irqwise.oci.tar
YAML=/root/irqwise-daemonset.yaml
PLAY=/tmp/irqwise-daemonset.yaml
VERSION=$(dpkg-query -W -f='${Version}' irqwise); VERSION=${VERSION%-*}
IMG=localhost/irqwise:$VERSION
# minbase has no D-Bus, which podman's systemd cgroup manager talks to: cgroupfs.
mkdir -p /etc/containers
printf '[engine]\ncgroup_manager = "cgroupfs"\n' > /etc/containers/containers.conf

PODMAN_VERSION=$(podman version --format '{{.Client.Version}}' 2>&1 | tail -1)
measure podman_version "$PODMAN_VERSION"
podman_plays() {
  local major minor
  IFS=. read -r major minor _ <<< "$PODMAN_VERSION"
  REPLY="podman $PODMAN_VERSION ($(dpkg-query -W -f='${Version}' podman 2>&1)), $(crun --version 2>&1 | head -1), $(conmon --version 2>&1 | head -1), libc $(dpkg-query -W -f='${Version}' libc6 2>&1)"
  [ "${major:-0}" -gt 4 ] 2>/dev/null || { [ "${major:-0}" = 4 ] && [ "${minor:-0}" -ge 7 ] 2>/dev/null; }
}
check podman_version "the guest's podman plays DaemonSets (4.7 or later: Debian unstable's)" -- podman_plays

# The image as the manifest names it: `podman load`; `image:` changed only when the tag differs.
now; T0=$NOW
podman load -i $OCI > /tmp/kube-load.out 2>&1; LOAD_RC=$?
now; measure load_ms $((NOW - T0))
MIMG=$(sed -n 's/^ *image: *//p' $YAML | head -1)
sed "s|^\( *image: *\)$MIMG\$|\1$IMG|" $YAML > $PLAY
manifest_as_shipped() {
  local changed
  changed=$(diff $YAML $PLAY | grep -c '^>')
  REPLY="podman load: exit $LOAD_RC ($(tail -1 /tmp/kube-load.out)); the manifest names $MIMG, the image is $IMG: $changed line(s) changed"
  [ $LOAD_RC = 0 ] && { [ "$MIMG" = "$IMG" ] && [ "$changed" = 0 ] || [ "$changed" = 1 ]; }
}
check manifest "the image loaded; the manifest played as shipped (at most its image: line changed)" -- manifest_as_shipped

# The unit stops with restore_on_exit (a drop-in for this stop only): the pod must write the masks.
printf '[global]\nrestore_on_exit = true\n' > $DROPINS/50-vm-kube.toml
systemctl reload $UNIT
systemctl stop $UNIT
rm -f $DROPINS/50-vm-kube.toml
read_masks "$NIC_IRQS"; BEFORE=$MASKS

now; T0=$NOW; CALL_MS=$(date +%s%3N)
podman kube play $PLAY > /tmp/kube-play.out 2>&1; PLAY_RC=$?
now; measure play_ms $((NOW - T0)); PLAY_AT=$(date -u +%T.%N)
note "podman kube play: exit $PLAY_RC: $(tr '\n' '|' < /tmp/kube-play.out | tail -c 600)"
# The pod's irqwise container (not the infra one) and its host pid.
CNAME=$(podman ps -a --format '{{.Names}} {{.IsInfra}} {{.PodName}}' 2>/dev/null | awk '$2 == "false" && $3 != "" { print $1; exit }')
POD=$(podman ps -a --format '{{.Names}} {{.PodName}}' 2>/dev/null | awk -v c="$CNAME" '$1 == c { print $2 }')
CPID=""
kube_pass() {
  [ -n "$CPID" ] && [ "$CPID" != 0 ] || CPID=$(podman inspect --format '{{.State.Pid}}' "$CNAME" 2>/dev/null)
  [ "$(awk -f /guest/planrows.awk -v get=pid /run/irqwise/state.json 2>/dev/null)" = "$CPID" ] &&
    [ "$(state_passes)" -ge 1 ] 2>/dev/null
}
wait_until 30000 kube_pass; PASS_MS=$WAITED_MS
# first_pass_ms: `kube play` called to pass 1 as the daemon's log times it (the polls above go
# through podman, seconds each under TCG, so PASS_MS bounds it from above only).
PASS1=$(podman logs "$CNAME" 2>&1 | grep -m1 -F ' pass 1 (' | cut -d' ' -f1)
FIRST_MS=-1; [ -z "$PASS1" ] || FIRST_MS=$(( $(date -d "$PASS1" +%s%3N) - CALL_MS ))
measure first_pass_ms "$FIRST_MS"
# Where the time to the first pass goes: the container's start, then the daemon's own start.
note "kube play returned at ${PLAY_AT%???}; container started at $(podman inspect --format '{{.State.StartedAt}}' "$CNAME" 2>&1 | head -1); the daemon's first log line: $(podman logs "$CNAME" 2>&1 | head -1 | cut -c1-160)"
pod_runs() {
  local st ns="" n
  [ $PLAY_RC = 0 ] || { REPLY="podman kube play: exit $PLAY_RC: $(tail -c 400 /tmp/kube-play.out | tr '\n' '|')"; return 1; }
  [ -n "$CNAME" ] || { REPLY="no container in a pod: $(podman ps -a --format '{{.Names}} {{.PodName}} {{.State}}' 2>&1 | tr '\n' '|')"; return 1; }
  st=$(podman pod inspect --format '{{.State}}' "$POD" 2>&1)
  REPLY="pod $POD ($st), container $CNAME: $(podman inspect --format '{{.State.Status}}, image {{.ImageName}}, privileged {{.HostConfig.Privileged}}, read-only root {{.HostConfig.ReadonlyRootfs}}' "$CNAME" 2>&1)"
  [ "$PASS_MS" -ge 0 ] || { REPLY="$REPLY; no pass of its daemon (pid ${CPID:-?}) in 30 s: $(podman logs "$CNAME" 2>&1 | tail -5 | tr '\n' '|')"; return 1; }
  # The daemon's network and PID namespaces are the host's (hostNetwork, hostPID).
  for n in net pid; do [ "$(readlink /proc/$CPID/ns/$n)" = "$(readlink /proc/1/ns/$n)" ] && ns="$ns $n"; done
  REPLY="$REPLY; its daemon (pid $CPID) in the host's namespaces:${ns:- none}, pass 1 logged $FIRST_MS ms after kube play was called (seen in its state file after $PASS_MS ms)"
  [ "$st" = Running ] && [ "$ns" = " net pid" ] &&
    [ "$(podman inspect --format '{{.HostConfig.Privileged}} {{.HostConfig.ReadonlyRootfs}}' "$CNAME" 2>/dev/null)" = "true true" ]
}
check pod_runs "podman kube play: the DaemonSet's pod runs privileged with the host's network and PIDs on a read-only root, its daemon passes" -- pod_runs
# The daemon's log from now to its exit (kube down removes the container with its log).
[ -z "$CNAME" ] || { timeout 120 podman logs -f "$CNAME" > /tmp/kube-daemon.log 2>&1 & LOGGER=$!; }

# configmap: the ConfigMap's key mounted as conf.d/50-fleet.toml, as the manifest writes it, and
# read by the daemon's configuration (`irqwise check-config` in the pod).
PCFG=/tmp/kube-cfg
rm -rf $PCFG; mkdir -p $PCFG/etc/irqwise/conf.d
cp /etc/irqwise/irqwise.toml $PCFG/etc/irqwise/
# The image holds irqwise alone (no cat): the file is read through the daemon's root (hostPID).
cat /proc/"${CPID:-0}"/root/etc/irqwise/conf.d/50-fleet.toml > $PCFG/etc/irqwise/conf.d/50-fleet.toml 2>/tmp/kube-exec.err
# The ConfigMap's 50-fleet.toml block in the manifest, its indentation removed.
awk '/^  50-fleet.toml: \|/ { on = 1; next } on && /^---/ { exit } on { sub(/^    /, ""); print }' $YAML > /tmp/kube-cm.toml
configmap() {
  local cc
  cc=$(podman exec "$CNAME" /usr/sbin/irqwise check-config 2>&1 | tr '\n' '|')
  REPLY="in the pod: conf.d/50-fleet.toml $(wc -c < $PCFG/etc/irqwise/conf.d/50-fleet.toml) bytes, $(grep -c '^restore_on_exit = true' $PCFG/etc/irqwise/conf.d/50-fleet.toml) restore_on_exit = true line; check-config: $cc"
  cmp -s /tmp/kube-cm.toml $PCFG/etc/irqwise/conf.d/50-fleet.toml || { REPLY="$REPLY; differs from the manifest's ConfigMap: $(diff /tmp/kube-cm.toml $PCFG/etc/irqwise/conf.d/50-fleet.toml | head -4 | tr '\n' '|')"; return 1; }
  grep -q '^restore_on_exit = true' $PCFG/etc/irqwise/conf.d/50-fleet.toml && [[ $cc == *conf.d/50-fleet.toml* ]]
}
check configmap "the manifest's ConfigMap mounted on conf.d (50-fleet.toml as written there) and read by irqwise in the pod" -- configmap
read_masks "$NIC_IRQS"; PLACED=$MASKS
kube_placed() {
  with_cfg $PCFG placed_as_planned || return 1
  [ "$PLACED" != "$BEFORE" ] || { REPLY="$REPLY; but nothing moved: the masks were already so"; return 1; }
}
check placed "the pod's irqwise placed the NIC's queues as planned with the ConfigMap's configuration" -- kube_placed
HEALTH=$(podman inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}no health check{{end}}' "$CNAME" 2>&1 | head -1)
# podman kube play turns livenessProbe and startupProbe into health checks, not readinessProbe
# (containers/podman issue 12417, open): the manifest's readinessProbe is not run under podman.
note "the container's health check (podman maps no readinessProbe): $HEALTH"
if proc_sample "${CPID:-0}"; then measure container_rss_kb "$S_RSS"; fi
PROBLEMS=$(grep -iE '\b(error|warn(ing)?|panic)' /tmp/kube-daemon.log | head -3 | tr '\n' '|')
kube_log_clean() { REPLY=${PROBLEMS:-none}; [ -z "$PROBLEMS" ]; }
check log_clean "the pod's daemon logged no error, warning or panic at start" -- kube_log_clean

# kube_down: `podman kube down` stops the pod (SIGTERM): restore_on_exit, from the ConfigMap,
# puts the masks from before the pod back, and the pod is gone.
now; T0=$NOW
podman kube down $PLAY > /tmp/kube-down.out 2>&1; DOWN_RC=$?
now; measure down_ms $((NOW - T0))
[ -z "${LOGGER:-}" ] || wait "$LOGGER" 2>/dev/null
read_masks "$NIC_IRQS"; AFTER=$MASKS
kube_down() {
  local log
  log=$(grep -m1 -E 'restored [0-9]+ of [0-9]+' /tmp/kube-daemon.log)
  REPLY="podman kube down: exit $DOWN_RC ($(tr '\n' ' ' < /tmp/kube-down.out | tail -c 200)); masks $AFTER (before the pod: $BEFORE); pod log: ${log:-no restore line}"
  [ $DOWN_RC = 0 ] && [ "$AFTER" = "$BEFORE" ] && [ -n "$log" ] && ! podman pod exists "$POD" 2>/dev/null
}
check down_restores "podman kube down: the pod gone, the masks from before it back (the ConfigMap's restore_on_exit)" -- kube_down
note "pod log: $(tail -6 /tmp/kube-daemon.log | tr '\n' '|')"

systemctl start $UNIT
rm -rf $PCFG $PLAY /etc/containers/containers.conf
host_back() {
  REPLY="$(prop ActiveState); conf.d: $(ls $DROPINS | tr '\n' ' ')"
  [ "$(prop ActiveState)" = active ] && ! [ -e $DROPINS/50-vm-kube.toml ] && placed_as_planned
}
check host_back "the unit runs again with its normal configuration, the NIC as planned" -- host_back
now; measure scenario_ms $((NOW - KUBE_T0))
