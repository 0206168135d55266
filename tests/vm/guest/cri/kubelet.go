// kubelet: the kubelet's part in the systemd-sid tier's containerd scenario (66-containerd-nri.sh),
// a small CRI client on containerd's socket, as crictl is. Built on the host at test time from
// Debian's packages (tests/vm/host/containerd.sh: the CRI API's generated code and gRPC, in
// GOPATH mode), never committed as a binary.
//
// Every command makes one CRI call and prints one line on success:
//
//	OK <command> <start_ms> <end_ms> [<value>]
//
// start_ms and end_ms are CLOCK_BOOTTIME in milliseconds (the clock of /proc/uptime, which the
// guest's scripts read) just before the call and when its answer came; value is the new id
// (runp, create), the container's pid (pid) or the runtime's name and version (version). An
// error goes to stderr with exit status 1.
//
// usage: kubelet [-socket PATH] COMMAND ARGS
//
//	version                                  Version and Status (RuntimeReady)
//	runp NAME UID [KEY=VALUE...]             RunPodSandbox: host network, cgroup parent
//	                                         /kubepods/podUID, the pairs as pod annotations
//	create POD NAME UID CNAME IMAGE CPUS [KEY=VALUE...] -- CMD...
//	                                         CreateContainer CNAME in sandbox POD (its config
//	                                         rebuilt from NAME UID and the pairs, as the kubelet
//	                                         sends it again), cpuset_cpus = CPUS
//	start ID | stop ID | rm ID               StartContainer, StopContainer (timeout 0), RemoveContainer
//	stopp POD | rmp POD                      StopPodSandbox, RemovePodSandbox
//	pid ID                                   the container's pid (verbose ContainerStatus)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// bootMs is CLOCK_BOOTTIME in milliseconds.
func bootMs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return -1
	}
	return ts.Sec*1000 + ts.Nsec/1000000
}

// annotations parses KEY=VALUE arguments.
func annotations(args []string) (map[string]string, error) {
	m := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("annotation %q: expected KEY=VALUE", a)
		}
		m[k] = v
	}
	return m, nil
}

// hostNamespaces: the node's network namespace (no CNI needed), the container's own PIDs, the
// pod's IPC, as the kubelet asks for a hostNetwork pod.
func hostNamespaces() *cri.NamespaceOption {
	return &cri.NamespaceOption{Network: cri.NamespaceMode_NODE, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD}
}

// podConfig is the sandbox config the kubelet sends for the hostNetwork pod NAME/UID in
// namespace default: no hostname (the pod shares the node's UTS namespace, where the runtime may
// set none).
func podConfig(name, uid string, ann map[string]string) *cri.PodSandboxConfig {
	return &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Uid: uid, Namespace: "default"},
		LogDirectory: "/var/log/pods/default_" + name + "_" + uid,
		Labels: map[string]string{
			"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid,
		},
		Annotations: ann,
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent:    "/kubepods/pod" + uid,
			SecurityContext: &cri.LinuxSandboxSecurityContext{NamespaceOptions: hostNamespaces()},
		},
	}
}

// containerConfig is the container NAME of image IMAGE running CMD on CPUS.
func containerConfig(pod *cri.PodSandboxConfig, name, image, cpus string, cmd []string) *cri.ContainerConfig {
	md := pod.GetMetadata()
	return &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: name},
		Image:    &cri.ImageSpec{Image: image},
		Command:  cmd,
		Labels: map[string]string{
			"io.kubernetes.container.name": name, "io.kubernetes.pod.name": md.GetName(),
			"io.kubernetes.pod.namespace": md.GetNamespace(), "io.kubernetes.pod.uid": md.GetUid(),
		},
		LogPath: name + "/0.log",
		Linux: &cri.LinuxContainerConfig{
			Resources:       &cri.LinuxContainerResources{CpuShares: 1024, CpusetCpus: cpus},
			SecurityContext: &cri.LinuxContainerSecurityContext{NamespaceOptions: hostNamespaces()},
		},
	}
}

// run makes the call args[0] names; returns the value to print.
func run(ctx context.Context, rt cri.RuntimeServiceClient, args []string) (string, error) {
	need := func(n int) error {
		if len(args) < n+1 {
			return fmt.Errorf("%s: expected %d arguments, got %d", args[0], n, len(args)-1)
		}
		return nil
	}
	switch args[0] {
	case "version":
		v, err := rt.Version(ctx, &cri.VersionRequest{})
		if err != nil {
			return "", err
		}
		st, err := rt.Status(ctx, &cri.StatusRequest{})
		if err != nil {
			return "", err
		}
		conds := []string{}
		for _, c := range st.GetStatus().GetConditions() {
			conds = append(conds, fmt.Sprintf("%s=%v", c.GetType(), c.GetStatus()))
		}
		return fmt.Sprintf("%s %s %s", v.GetRuntimeName(), v.GetRuntimeVersion(), strings.Join(conds, ",")), nil
	case "runp":
		if err := need(2); err != nil {
			return "", err
		}
		ann, err := annotations(args[3:])
		if err != nil {
			return "", err
		}
		r, err := rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: podConfig(args[1], args[2], ann)})
		return r.GetPodSandboxId(), err
	case "create":
		sep := -1
		for i, a := range args {
			if a == "--" {
				sep = i
				break
			}
		}
		if sep < 7 || sep == len(args)-1 {
			return "", fmt.Errorf("create: expected POD NAME UID CNAME IMAGE CPUS [KEY=VALUE...] -- CMD...")
		}
		ann, err := annotations(args[7:sep])
		if err != nil {
			return "", err
		}
		pod := podConfig(args[2], args[3], ann)
		r, err := rt.CreateContainer(ctx, &cri.CreateContainerRequest{
			PodSandboxId:  args[1],
			Config:        containerConfig(pod, args[4], args[5], args[6], args[sep+1:]),
			SandboxConfig: pod,
		})
		return r.GetContainerId(), err
	case "start", "stop", "rm", "stopp", "rmp", "pid":
		if err := need(1); err != nil {
			return "", err
		}
		return simple(ctx, rt, args[0], args[1])
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

// simple makes the one-id calls.
func simple(ctx context.Context, rt cri.RuntimeServiceClient, cmd, id string) (string, error) {
	var err error
	switch cmd {
	case "start":
		_, err = rt.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: id})
	case "stop":
		_, err = rt.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: id, Timeout: 0})
	case "rm":
		_, err = rt.RemoveContainer(ctx, &cri.RemoveContainerRequest{ContainerId: id})
	case "stopp":
		_, err = rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id})
	case "rmp":
		_, err = rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: id})
	case "pid":
		r, e := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id, Verbose: true})
		if e != nil {
			return "", e
		}
		var info struct {
			Pid int `json:"pid"`
		}
		if e := json.Unmarshal([]byte(r.GetInfo()["info"]), &info); e != nil || info.Pid == 0 {
			return "", fmt.Errorf("container %s: no pid in its verbose status (%v)", id, e)
		}
		return fmt.Sprint(info.Pid), nil
	}
	return "", err
}

func main() {
	socket := flag.String("socket", "/run/containerd/containerd.sock", "the runtime's CRI socket")
	timeout := flag.Duration("timeout", 60*time.Second, "limit for the call")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: kubelet [-socket PATH] version|runp|create|start|stop|rm|stopp|rmp|pid ARGS")
		os.Exit(2)
	}
	conn, err := grpc.NewClient("unix://"+*socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %s: %v\n", *socket, err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	t0 := bootMs()
	value, err := run(ctx, cri.NewRuntimeServiceClient(conn), args)
	t1 := bootMs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %s: %v\n", strings.Join(args, " "), err)
		os.Exit(1)
	}
	fmt.Printf("OK %s %d %d %s\n", args[0], t0, t1, value)
}
