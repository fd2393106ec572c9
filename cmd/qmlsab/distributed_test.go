package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/qmlsab/qmlsab/store"
)

// recipe is the fenced block of docs/distributed.md marked
// qmlsab-recipe=name.
func recipe(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "distributed.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```") && strings.Contains(line, "qmlsab-recipe="+name):
			in = true
		case in && strings.HasPrefix(line, "```"):
			return strings.Join(out, "\n") + "\n"
		case in:
			out = append(out, line)
		}
	}
	t.Fatalf("docs/distributed.md has no block marked qmlsab-recipe=%s", name)
	return ""
}

// hostEnv makes a process play its own host.
func hostEnv(name string) string {
	return fmt.Sprintf(`%s={"hostname":%q,"cpuModel":"recipe CPU","cores":2}`, "QMLSAB_HOST_FINGERPRINT", name)
}

// copyTree copies the contents of folder src into folder dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

type ghStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	With map[string]any    `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

type ghJob struct {
	Needs    any               `yaml:"needs"`
	Env      map[string]string `yaml:"env"`
	Strategy struct {
		Matrix map[string][]any `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []ghStep `yaml:"steps"`
}

// ghExpand replaces each GitHub Actions expression in s, ${{ key }},
// with value(key).
func ghExpand(s string, value func(key string) string) string {
	return replaceEach(s, "${{", "}}", func(key string) string { return value(strings.TrimSpace(key)) })
}

// The GitHub Actions recipe, as written, for three nights into one
// history: each night, each matrix job's run: steps in its own workspace
// (a separate process per shard, each its own host), the artifacts
// uploaded and downloaded as the actions do with pattern: and
// merge-multiple:, then the merge job's steps (merge, report --history,
// detect). The history then holds three nights, each with its shards'
// hosts, though every night's merged folder has the same name.
func TestGitHubActionsRecipeRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the recipe's shards")
	}
	var wf struct {
		Env  map[string]any   `yaml:"env"`
		Jobs map[string]ghJob `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(recipe(t, "github-actions")), &wf); err != nil {
		t.Fatalf("the workflow is not YAML: %v", err)
	}
	bin := buildQmlsab(t)
	base := t.TempDir()
	db := filepath.Join(base, "history.db")
	shardJob, mergeJob := wf.Jobs["shard"], wf.Jobs["merge"]
	if len(shardJob.Steps) == 0 || len(mergeJob.Steps) == 0 || fmt.Sprint(mergeJob.Needs) != "shard" {
		t.Fatalf("want a shard job and a merge job that needs it: %+v", wf.Jobs)
	}
	shards := shardJob.Strategy.Matrix["shard"]
	if fmt.Sprint(wf.Env["SHARDS"]) != fmt.Sprint(len(shards)) {
		t.Fatalf("SHARDS is %v but the matrix has %d shards", wf.Env["SHARDS"], len(shards))
	}
	var nights []string
	for night := 1; night <= 3; night++ {
		id := fmt.Sprint(9000 + night) // github.run_id: one per workflow run
		nights = append(nights, runGitHubNight(t, bin, wf.Env, shardJob, mergeJob, filepath.Join(base, "night-"+id),
			map[string]string{"github.run_id": id, "github.ref_name": "main", "secrets.QMLSAB_HISTORY": db}))
	}
	out, code := qmlsab(t, "history", "list", "--wide", "--history-db", db, "--label", "branch=main")
	if code != 0 || strings.Count(out, "\n") != 1+len(nights) {
		t.Fatalf("history list: exit %d, want %d nights:\n%s", code, len(nights), out)
	}
	t.Logf("history list:\n%s", out)
	for _, id := range nights {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "  "+id+"  ") {
				line = l
			}
		}
		if !strings.Contains(line, "runner-1,runner-2,runner-3") {
			t.Errorf("night %s is not stored with its shards' hosts runner-1,runner-2,runner-3:\n%s", id, out)
		}
	}
}

// runGitHubNight runs the workflow's jobs once under root (one workflow
// run: vars are its ${{ }} values) and returns the night's run id.
func runGitHubNight(t *testing.T, bin string, wfEnv map[string]any, shardJob, mergeJob ghJob, root string, vars map[string]string) string {
	t.Helper()
	artifacts := filepath.Join(root, "artifacts")
	shards := shardJob.Strategy.Matrix["shard"]
	var amu sync.Mutex
	// runJob runs a job's steps in a fresh workspace with bin/qmlsab.
	runJob := func(job ghJob, name string, vars map[string]string, extra ...string) (string, error) {
		ws := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(ws, "bin"), 0o755)
		if err := os.Symlink(bin, filepath.Join(ws, "bin", "qmlsab")); err != nil {
			return "", err
		}
		summary := filepath.Join(ws, "step-summary.md")
		var log strings.Builder
		sub := func(s string) (string, error) {
			var bad error
			out := ghExpand(s, func(k string) string {
				v, ok := vars[k]
				if !ok {
					bad = fmt.Errorf("%s: the test does not know ${{ %s }}", name, k)
				}
				return v
			})
			return out, bad
		}
		env := []string{}
		for _, level := range []map[string]string{stringValues(wfEnv), job.Env} {
			for k, v := range level {
				v, err := sub(v)
				if err != nil {
					return "", err
				}
				env = append(env, k+"="+v)
			}
		}
		for _, st := range job.Steps {
			with := map[string]string{}
			for k, v := range st.With {
				s, err := sub(fmt.Sprint(v))
				if err != nil {
					return log.String(), err
				}
				with[k] = s
			}
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"), strings.HasPrefix(st.Uses, "actions/setup-go@"):
			case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
				art, err := sub(with["name"])
				if err != nil {
					return log.String(), err
				}
				amu.Lock()
				// A single folder is uploaded as its contents.
				err = copyTree(filepath.Join(ws, with["path"]), filepath.Join(artifacts, art))
				amu.Unlock()
				if err != nil {
					return log.String(), fmt.Errorf("%s: upload %s: %v", name, art, err)
				}
			case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
				pattern, path := with["pattern"], filepath.Join(ws, with["path"])
				entries, _ := os.ReadDir(artifacts)
				n := 0
				for _, e := range entries {
					if ok, _ := filepath.Match(pattern, e.Name()); ok {
						dst := filepath.Join(path, e.Name())
						if with["merge-multiple"] == "true" {
							dst = path
						}
						if err := copyTree(filepath.Join(artifacts, e.Name()), dst); err != nil {
							return log.String(), err
						}
						n++
					}
				}
				if n == 0 {
					return log.String(), fmt.Errorf("%s: no artifact matches %q", name, pattern)
				}
			case st.Uses != "":
				return log.String(), fmt.Errorf("%s: the test does not know the action %s", name, st.Uses)
			case strings.TrimSpace(st.Run) == "make build":
				// bin/qmlsab is the test's binary.
			default:
				script, err := sub(st.Run)
				if err != nil {
					return log.String(), err
				}
				cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
				cmd.Dir = ws
				cmd.Env = append(append(append(os.Environ(), env...), "GITHUB_STEP_SUMMARY="+summary), extra...)
				for k, v := range st.Env {
					v, err := sub(v)
					if err != nil {
						return log.String(), err
					}
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				out, err := cmd.CombinedOutput()
				fmt.Fprintf(&log, "$ %s\n%s", script, out)
				if err != nil {
					return log.String(), fmt.Errorf("%s: step %q: %v", name, st.Name, err)
				}
			}
		}
		return log.String(), nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(shards))
	logs := make([]string, len(shards))
	for i, s := range shards {
		wg.Go(func() {
			shardVars := map[string]string{"matrix.shard": fmt.Sprint(s)}
			for k, v := range vars {
				shardVars[k] = v
			}
			logs[i], errs[i] = runJob(shardJob, fmt.Sprintf("shard-job-%v", s), shardVars, hostEnv(fmt.Sprintf("runner-%v", s)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%v\n%s", err, logs[i])
		}
	}
	out, err := runJob(mergeJob, "merge-job", vars)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	merged := filepath.Join(artifacts, "qmlsab-merged")
	r, err := store.Open(merged)
	if err != nil {
		t.Fatalf("the uploaded merged run: %v\n%s", err, out)
	}
	if len(r.Manifest.Shards) != len(shards) || len(r.Manifest.Hosts) != len(shards) || len(r.Trials["D"]) != 6 || len(r.Trials["E"]) != 6 {
		t.Errorf("merged run: %d shards, %d hosts, %d+%d trials; want 3, 3, 6+6", len(r.Manifest.Shards), len(r.Manifest.Hosts), len(r.Trials["D"]), len(r.Trials["E"]))
	}
	for _, f := range []string{"report.html", "summary.json", "summary.md", "perf.json"} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("the merged artifact lacks %s", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "merge-job", "step-summary.md")); !strings.Contains(string(b), "The trials ran on 3 hosts") {
		t.Errorf("the step summary does not show the hosts:\n%s", b)
	}
	if !strings.Contains(out, "history: added") {
		t.Errorf("the history step added nothing:\n%s", out)
	}
	if !strings.Contains(out, "$ bin/qmlsab history detect") {
		t.Errorf("the merge job ran no history detect:\n%s", out)
	}
	if r.Manifest.RunID == "" || !strings.HasPrefix(r.Manifest.RunID, "gh-"+vars["github.run_id"]+"-") {
		t.Errorf("the merged run's id is %q; want the workflow run's stamp gh-%s", r.Manifest.RunID, vars["github.run_id"])
	}
	return r.Manifest.RunID
}

// stringValues are a YAML mapping's values as strings.
func stringValues(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// The Kubernetes recipe, as written: the Indexed Job's pods as separate
// processes with JOB_COMPLETION_INDEX set and the shared volume in a
// temporary folder, one pod run again (a retry takes the resume path),
// then the merge Job.
func TestKubernetesRecipeRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the recipe's shards")
	}
	type container struct {
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		EnvFrom []struct {
			ConfigMapRef struct {
				Name string `yaml:"name"`
			} `yaml:"configMapRef"`
		} `yaml:"envFrom"`
		VolumeMounts []struct {
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	type doc struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []container `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(strings.NewReader(recipe(t, "kubernetes")))
	var config map[string]string
	var configName string
	var shardPod, mergePod *container
	completions := 0
	for {
		var d doc
		if err := dec.Decode(&d); err != nil {
			break
		}
		switch {
		case d.Kind == "ConfigMap":
			config, configName = d.Data, d.Metadata.Name
		case d.Kind == "Job" && d.Spec.CompletionMode == "Indexed" && len(d.Spec.Template.Spec.Containers) == 1:
			shardPod, completions = &d.Spec.Template.Spec.Containers[0], d.Spec.Completions
		case d.Kind == "Job" && len(d.Spec.Template.Spec.Containers) == 1:
			mergePod = &d.Spec.Template.Spec.Containers[0]
		}
	}
	if config == nil || shardPod == nil || mergePod == nil || fmt.Sprint(completions) != config["SHARDS"] {
		t.Fatalf("want a ConfigMap, an Indexed Job with completions = SHARDS and a merge Job (config %v, completions %d)", config, completions)
	}
	bin := buildQmlsab(t)
	volume := t.TempDir()
	pod := func(c *container, extra ...string) (string, error) {
		if len(c.VolumeMounts) != 1 || len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != configName {
			return "", fmt.Errorf("a container needs the volume and the ConfigMap %s: %+v", configName, c)
		}
		argv := append(append([]string{}, c.Command...), c.Args...)
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], c.VolumeMounts[0].MountPath, volume)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		for k, v := range config {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var wg sync.WaitGroup
	outs := make([]string, completions)
	errs := make([]error, completions)
	for i := range completions {
		wg.Go(func() {
			outs[i], errs[i] = pod(shardPod, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), hostEnv(fmt.Sprintf("node-%d", i)))
		})
	}
	wg.Wait()
	for i := range completions {
		if errs[i] != nil || !strings.Contains(outs[i], fmt.Sprintf("shard %d/%d", i+1, completions)) {
			t.Fatalf("pod %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	// A retried pod finds its shard and resumes it: nothing is run twice.
	// The pod before it was SIGKILLed as PID 1 (its container's), leaving
	// its run.lock naming pid 1, which is alive; nobody holds its flock.
	if err := os.WriteFile(filepath.Join(volume, config["RUN"], "shard-1", "run.lock"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := pod(shardPod, "JOB_COMPLETION_INDEX=1", hostEnv("node-9"))
	if err != nil || strings.Contains(out, ": started") {
		t.Fatalf("pod 1 again: %v; want the finished shard resumed with nothing to run:\n%s", err, out)
	}
	if out, err := pod(mergePod); err != nil {
		t.Fatalf("merge pod: %v\n%s", err, out)
	}
	merged := filepath.Join(volume, config["RUN"], "merged")
	r, err := store.Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifest.Shards) != completions || len(r.Manifest.Hosts) != completions || len(r.Trials["D"]) != 6 || len(r.Trials["E"]) != 6 {
		t.Errorf("merged run: %d shards, %d hosts, %d+%d trials; want %d, %d, 6+6", len(r.Manifest.Shards), len(r.Manifest.Hosts),
			len(r.Trials["D"]), len(r.Trials["E"]), completions, completions)
	}
	if !strings.HasPrefix(r.Manifest.RunID, config["QMLSAB_RUN_ID"]+"-") {
		t.Errorf("the merged run's id is %q; want the ConfigMap's QMLSAB_RUN_ID %q and the plan", r.Manifest.RunID, config["QMLSAB_RUN_ID"])
	}
	if b, err := os.ReadFile(filepath.Join(merged, "report.html")); err != nil || !strings.Contains(string(b), `id="hosts-table"`) {
		t.Errorf("the merged report lacks the host table: %v", err)
	}
}
