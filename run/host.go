package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// HostFingerprintEnv names the environment variable that overrides what
// DetectHost finds: a JSON object with any of the fields of store.Host
// (hostname, cpuModel, cores, memoryBytes, kernel, target), for tests that
// play several hosts on one machine, or for a pipeline that knows better.
const HostFingerprintEnv = "QMLSAB_HOST_FINGERPRINT"

// DetectHost is the fingerprint of the machine running the arms' trials:
// its CPU model, cores, memory, kernel, hostname and the arms' target
// kinds, with HostFingerprintEnv's fields over them.
func DetectHost(armList []arms.Arm) (store.Host, error) {
	h := store.Host{Cores: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = procField(b, "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := strconv.ParseInt(strings.TrimSuffix(procField(b, "MemTotal"), " kB"), 10, 64); err == nil {
			h.MemoryBytes = kb << 10
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if h.Kernel == "" {
		h.Kernel = runtime.GOOS
	}
	var targets []string
	for _, a := range armList {
		if !slices.Contains(targets, a.Target) {
			targets = append(targets, a.Target)
		}
	}
	h.Target = strings.Join(targets, ",")
	if v := os.Getenv(HostFingerprintEnv); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			return store.Host{}, fmt.Errorf("%s: want a JSON object with any of hostname, cpu_model, cores, memory_bytes, kernel, target (cpuModel and memoryBytes are read too): %v", HostFingerprintEnv, err)
		}
	}
	return h.WithID(), nil
}

// procField is the value of the first "name : value" line of a /proc file.
func procField(b []byte, name string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
