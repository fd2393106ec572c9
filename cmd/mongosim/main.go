// Command mongosim is a simulated mongod. It takes mongod's flags
// (--port --replSet --dbpath --bind_ip --maxConns --setParameter k=v) so the local
// target can launch it exactly like a mongod binary; flags that only the
// simulator has start with --sim.
//
// Sharded clusters: --configsvr and --shardsvr start a config server or a
// shard member (with --replSet, as mongod); --router --configdb
// <cfgSet>/<host:port>,... starts a router (a simulated mongos) instead of
// a member. Invoked under a name starting "mongos" (a symlink), mongosim is
// a router without --router, so it can stand in for a mongos binary.
//
// Its answers come from a model, not a real server: buildInfo and
// serverStatus say so in their "mongosim" section.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/qmlsab/qmlsab/mongosim"
)

type setParams map[string]string

func (p setParams) String() string { return fmt.Sprint(map[string]string(p)) }
func (p setParams) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("expected name=value")
	}
	p[k] = val
	return nil
}

// exitDBPathInUse is mongod's exit status when its dbpath is locked by
// another process (an uncaught start-up exception).
const exitDBPathInUse = 100

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("mongosim", flag.ContinueOnError)
	port := fs.Int("port", 27017, "port to listen on")
	bindIP := fs.String("bind_ip", "127.0.0.1", "address to listen on")
	replSet := fs.String("replSet", "", "replica set name (empty: standalone)")
	dbpath := fs.String("dbpath", "", "directory for the member's durable state and its diagnostic.data (empty: in memory, no diagnostic data)")
	logpath := fs.String("logpath", "", "log file (default: standard output)")
	memLimit := fs.Int64("simMemLimitMB", 32768, "simulated memory limit of the member, MiB (an Atlas M50)")
	cpus := fs.Int("simCPUs", 8, "simulated CPUs of the member")
	baseline := fs.Int64("simBaselineMB", 0, "simulated mongod memory outside the WiredTiger cache and query memory, MiB (default: an M50's share of the memory limit, 1 GiB of 32)")
	disk := fs.Float64("simDiskMBps", 125, "simulated spill-disk bandwidth, MiB/s")
	restartDelay := fs.Duration("simRestartDelay", mongosim.DefaultRestartDelay, "how long an OOM-killed member stays down before it restarts")
	oomExit := fs.Bool("simOOMExit", false, "on a simulated OOM kill, exit (status 137) instead of restarting in-process")
	scanScale := fs.Float64("simScanScale", 1, "modelled documents per real document a query scans")
	partition := fs.Int64("simPartitionMB", 20, "modelled $setWindowFields partition a getMore loads, MiB")
	simSeed := fs.Uint64("simSeed", 1, "seed of the member's model")
	omitStatus := fs.String("simOmitStatusSections", "", "comma-separated top-level serverStatus sections to leave out, e.g. queryMemory,queues,mem (a server that does not report them, as a 7.0 mongod has no queryMemory.loadShedding)")
	omitHostInfo := fs.String("simOmitHostInfo", "", "comma-separated hostInfo.system fields to leave out, e.g. memLimitMB")
	configsvr := fs.Bool("configsvr", false, "run as a config server member of a sharded cluster (with --replSet)")
	shardsvr := fs.Bool("shardsvr", false, "run as a shard member of a sharded cluster (with --replSet)")
	router := fs.Bool("router", false, "run as a router (a simulated mongos) over --configdb")
	configdb := fs.String("configdb", "", "the router's config server replica set, <setName>/<host:port>[,...]")
	maxConns := fs.Int("maxConns", mongosim.DefaultMaxIncomingConnections, "most incoming connections open at once (net.maxIncomingConnections; never more than 80% of the open-files limit); one past it is closed")
	params := setParams{}
	fs.Var(params, "setParameter", "server parameter name=value (repeatable)")
	fs.Bool("fork", false, "ignored (mongosim never forks)")
	fs.Bool("quiet", false, "ignored")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mongosim [flags]            a simulated mongod: its figures come from a model")
		fs.PrintDefaults()
	}
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := checkFlags(fs); err != nil {
		fmt.Fprintf(os.Stderr, "mongosim: %v\n", err)
		return 2
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), "mongos") && !strings.HasPrefix(filepath.Base(os.Args[0]), "mongosim") {
		*router = true
	}
	if *configsvr && *shardsvr {
		fmt.Fprintln(os.Stderr, "mongosim: --configsvr and --shardsvr exclude each other")
		return 2
	}
	if (*configsvr || *shardsvr) && *replSet == "" {
		fmt.Fprintln(os.Stderr, "mongosim: --configsvr and --shardsvr need --replSet")
		return 2
	}
	out := os.Stdout
	if *logpath != "" {
		f, err := os.OpenFile(*logpath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mongosim: --logpath %s: %v\n", *logpath, err)
			return 1
		}
		defer f.Close()
		out = f
	}
	logger := slog.New(slog.NewJSONHandler(out, nil))
	if *router {
		return runRouter(mongosim.RouterOptions{BindIP: *bindIP, Port: *port, ConfigDB: *configdb, Logger: logger,
			Limits: mongosim.ConnLimits{MaxIncomingConnections: *maxConns}})
	}
	var store mongosim.Storage
	if *dbpath != "" {
		// One process per dbpath, as mongod: a second one would interleave
		// the first one's oplog file and diagnostic.data.
		lock, err := mongosim.LockDBPath(*dbpath)
		if err != nil {
			logger.Error("exception at start-up", "error", err.Error())
			fmt.Fprintf(os.Stderr, "mongosim: %v\n", err)
			if errors.Is(err, mongosim.ErrDBPathInUse) {
				return exitDBPathInUse
			}
			return 1
		}
		defer lock.Release()
		store = &mongosim.DirStorage{Dir: *dbpath}
	}
	opts := mongosim.Options{BindIP: *bindIP, Port: *port, ReplSet: *replSet, Storage: store,
		Parameters: params, MemLimitMB: *memLimit, Logger: logger, Limits: mongosim.ConnLimits{MaxIncomingConnections: *maxConns},
		Sim: mongosim.SimOptions{CPUs: *cpus, BaselineMB: *baseline, DiskMBps: *disk, ScanScale: *scanScale, PartitionMB: *partition, Seed: *simSeed,
			OmitStatusSections: list(*omitStatus), OmitHostInfo: list(*omitHostInfo)}}
	switch {
	case *configsvr:
		opts.ClusterRole = mongosim.RoleConfigServer
	case *shardsvr:
		opts.ClusterRole = mongosim.RoleShardServer
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	for {
		srv, err := mongosim.Start(opts)
		if err != nil {
			// A corrupt dbpath file (*mongosim.CorruptFileError) names the
			// file and the byte offset; like mongod, the member does not
			// start on it.
			logger.Error("exception at start-up", "error", err.Error())
			fmt.Fprintf(os.Stderr, "mongosim: %v\n", err)
			return 1
		}
		select {
		case s := <-sig:
			logger.Info("shutting down", "signal", s.String())
			srv.Shutdown() // diagnostic.data archived whole, as mongod does on SIGTERM
			return 0
		case <-srv.Done():
		}
		srv.Kill()
		if !srv.OOMKilled() {
			return 0
		}
		if *oomExit {
			return 137 // as a process the kernel's OOM killer ended
		}
		// The member is gone; like an automation agent, start it again after
		// the restart delay, with fresh memory and its --dbpath state.
		logger.Warn("restarting after simulated OOM kill", "delay", restartDelay.String())
		select {
		case s := <-sig:
			logger.Info("shutting down", "signal", s.String())
			return 0
		case <-time.After(*restartDelay):
		}
		if store != nil {
			store = &mongosim.DirStorage{Dir: *dbpath}
			opts.Storage = store
		}
	}
}

// runRouter serves as a router until SIGINT/SIGTERM.
func runRouter(opts mongosim.RouterOptions) int {
	if opts.ConfigDB == "" {
		fmt.Fprintln(os.Stderr, "mongosim: a router needs --configdb <setName>/<host:port>,...")
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	rt, err := mongosim.StartRouter(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mongosim: %v\n", err)
		return 1
	}
	s := <-sig
	opts.Logger.Info("shutting down", "signal", s.String())
	if err := rt.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "mongosim: %v\n", err)
		return 1
	}
	return 0
}

// checkFlags refuses a flag value the member would otherwise replace by
// a default or act on wrongly (a negative size, a zero CPU count, a
// restart delay before the kill), naming the flag, as mongod refuses a
// bad option value before it starts (exit 2).
func checkFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		bad := func(want string) { err = fmt.Errorf("--%s %s: %s", f.Name, f.Value, want) }
		getter, _ := f.Value.(flag.Getter)
		if getter == nil {
			return
		}
		switch v := getter.Get().(type) {
		case int:
			switch f.Name {
			case "port":
				if v < 0 || v > 65535 {
					bad("must be between 0 and 65535")
				}
			case "simCPUs", "maxConns":
				if v < 1 {
					bad("must be at least 1")
				}
			}
		case int64:
			if v < 1 { // simMemLimitMB, simBaselineMB, simPartitionMB
				bad("must be at least 1")
			}
		case float64:
			if !(v > 0) || math.IsInf(v, 0) { // simDiskMBps, simScanScale (NaN too)
				bad("must be a positive number")
			}
		case time.Duration:
			if v < 0 { // simRestartDelay
				bad("must not be negative")
			}
		}
	})
	if err != nil {
		return err
	}
	// Only a baseline given is checked against the limit: the default
	// one is a share of the limit (model.DefaultHostFor).
	baseSet := false
	fs.Visit(func(f *flag.Flag) { baseSet = baseSet || f.Name == "simBaselineMB" })
	mem, base := fs.Lookup("simMemLimitMB").Value.(flag.Getter).Get().(int64), fs.Lookup("simBaselineMB").Value.(flag.Getter).Get().(int64)
	if baseSet && base >= mem {
		return fmt.Errorf("--simBaselineMB %d: must be below --simMemLimitMB %d (the resident memory before any query)", base, mem)
	}
	return nil
}

// list splits a comma-separated flag value, dropping empty items.
func list(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// normalizeArgs accepts mongod's "--setParameter=k=v" and "--flag value"
// spellings (the flag package already does) and mongod's dashed aliases.
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		a = strings.Replace(a, "--bind-ip", "--bind_ip", 1)
		out = append(out, a)
	}
	return out
}
