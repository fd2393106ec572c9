package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/outputfile"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/sweep"
)

// fitFlags are the flags of calibrate --fit alone.
var fitFlags = []string{"observed", "predict", "space", "samples", "starts", "refine", "acceptable", "predict-points", "fit-seeds", "profile", "parallel",
	"shard", "from", "merge", "format", "out"}

// ensembleFlags decide what an ensemble is: every shard of one is given
// the same; a stage-2 shard and a merge take it from their files.
var ensembleFlags = []string{"observed", "arms", "predict", "space", "samples", "starts", "refine", "acceptable", "predict-points", "fit-seeds", "n", "seed",
	"profile"}

const fitTitle = "qmlsab calibrate --fit (SIMULATED: a model of mongod on an M50, not a measurement)"

// fitAction is calibrate --fit: the ensemble on one host, one shard of
// either stage, or a merge of shards.
func fitAction(c *cli.Context) error {
	fail := refusal("qmlsab calibrate")
	for _, f := range []string{"storm-rate", "storm"} {
		if c.IsSet(f) {
			return fail("--%s: table mode only; --fit searches the storm's unknowns itself", f)
		}
	}
	if c.Int("parallel") < 0 {
		return fail("--parallel %d: must not be negative", c.Int("parallel"))
	}
	if out := c.String("out"); out != "" {
		if _, err := os.Stat(out); err != nil {
			// A folder made for this fit goes again when the fit writes
			// nothing into it (interrupted, failed): os.Remove leaves a
			// folder that is not empty.
			defer os.Remove(out)
		}
	}
	format := c.String("format")
	if format != formatText && format != "json" {
		return fail("--format %q: want text or json", format)
	}
	switch {
	case c.Bool("merge"):
		return fitMerge(c, fail)
	case c.IsSet("from"):
		return fitPredictShard(c, fail)
	}
	spec, err := ensembleSpec(c, fail)
	if err != nil {
		return err
	}
	ctx, done := fitContext(c)
	defer done()
	progress := fitProgress(c.App.ErrWriter)
	if c.IsSet("shard") {
		shard, err := plan.ParseShard(c.String("shard"))
		if err != nil {
			return fail("--shard %v, as in --shard 2/3", err)
		}
		if err := sweep.CheckShard(shard, spec.Starts); err != nil {
			return fail("--shard: %v", err)
		}
		dir, err := fitOut(c, fail, true, sweep.SearchFileName)
		if err != nil {
			return err
		}
		search, err := spec.RunSearch(ctx, &shard, c.Int("parallel"), progress)
		if err != nil {
			return fitFailed(ctx, fail, err)
		}
		if err := store.WriteJSON(filepath.Join(dir, sweep.SearchFileName), search); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(c.App.Writer, "search shard %s (chains %s): %d points, %d trials in %.0f s → %s\nnext: qmlsab calibrate --fit --merge --out DIR <every search shard's folder>\n",
			shard, chainsOf(shard, spec.Starts), len(search.Points), search.Trials, search.WallSeconds, filepath.Join(dir, sweep.SearchFileName))
		return nil
	}
	var dir string
	if c.IsSet("out") {
		if dir, err = fitOut(c, fail, false, sweep.EnsembleFileName, sweep.EnsemblePageName); err != nil {
			return err
		}
	}
	start := time.Now()
	en, err := spec.RunOne(ctx, c.Int("parallel"), progress)
	if err != nil {
		return fitFailed(ctx, fail, err)
	}
	return writeEnsemble(c, fail, en, spec, time.Since(start), dir)
}

// ensembleSpec is the ensemble the flags describe.
func ensembleSpec(c *cli.Context, fail func(string, ...any) error) (sweep.EnsembleSpec, error) {
	cfg := sweep.InvestigationEnsemble()
	for _, f := range []string{"samples", "starts", "fit-seeds", "predict-points"} {
		if c.Int(f) < 1 {
			return sweep.EnsembleSpec{}, fail("--%s %d: at least 1", f, c.Int(f))
		}
	}
	for _, f := range []string{"refine", "acceptable"} {
		if c.Int(f) < 0 {
			return sweep.EnsembleSpec{}, fail("--%s %d: must not be negative", f, c.Int(f))
		}
	}
	cfg.Seed, cfg.FitSeeds, cfg.PredictSeeds = c.Uint64("seed"), c.Int("fit-seeds"), c.Int("n")
	cfg.Samples, cfg.Starts, cfg.Steps, cfg.MinAcceptable, cfg.PredictPoints = c.Int("samples"), c.Int("starts"), c.Int("refine"), c.Int("acceptable"), c.Int("predict-points")
	cfg.Explore = sweep.ExploreProbes(cfg.MinAcceptable, cfg.Starts)
	cfg.Base = virtual.DefaultConfig(cfg.Seed)
	var own []arms.Arm
	profile := c.String("profile")
	source := sweep.InvestigationSource
	if runDir := c.String("observed"); runDir != "" {
		if c.IsSet("profile") {
			return sweep.EnsembleSpec{}, fail("--profile: with --observed the model runs the run's own phases")
		}
		if !c.IsSet("arms") {
			return sweep.EnsembleSpec{}, fail("--observed: name the run's arms to fit with --arms (as in --arms D,E)")
		}
		r, err := store.Open(runDir)
		if err != nil {
			return sweep.EnsembleSpec{}, fail("--observed %v", err)
		}
		obs, err := sweep.FromRun(r, commaList(c, "arms"))
		if err != nil {
			return sweep.EnsembleSpec{}, fail("--observed: %v", err)
		}
		cfg.Base.Workload, cfg.Observations, cfg.Constraints, cfg.Fitted, own, source = obs.Workload, obs.Observations, nil, obs.Fitted, obs.Arms, obs.Source
		profile = "the run's (" + r.Manifest.Profile + ")"
	} else {
		if c.IsSet("arms") {
			return sweep.EnsembleSpec{}, fail("--arms: table mode, or with --fit --observed the run's arms to fit; the investigation's fit is of D and E")
		}
		scale, err := run.ProfileScale(profile)
		if err != nil {
			return sweep.EnsembleSpec{}, fail("%v", err)
		}
		cfg.Base.Workload = scaled(cfg.Base.Workload, scale)
	}
	cfg.Predicted = nil
	predicted, err := arms.Select(commaList(c, "predict"), own)
	if err != nil {
		return sweep.EnsembleSpec{}, fail("--predict: %v", err)
	}
	for _, a := range predicted {
		m, err := sweep.ModelArm(a)
		if err != nil {
			return sweep.EnsembleSpec{}, fail("--predict: %v", err)
		}
		if slices.ContainsFunc(cfg.Fitted, func(r sweep.Role) bool { return r.Name == a.Name }) {
			return sweep.EnsembleSpec{}, fail("--predict: arm %s is fitted; predict the arms the fit does not use", a.Name)
		}
		cfg.Predicted = append(cfg.Predicted, m)
	}
	space := sweep.DefaultSpace()
	if given := repeatedFlag(c, "space"); len(given) > 0 {
		dims, err := sweep.ParseSpace(given)
		if err != nil {
			return sweep.EnsembleSpec{}, fail("--space %v%s", err, knobsHint(err))
		}
		space = dims
	}
	cfg.Space = space
	if err := cfg.Validate(); err != nil {
		return sweep.EnsembleSpec{}, fail("%v", err)
	}
	spec, err := cfg.Spec(source, profile)
	if err != nil {
		return spec, fail("%v", err)
	}
	if _, err := spec.Config(); err != nil {
		return spec, fail("%v", err)
	}
	return spec, nil
}

// fitPredictShard is calibrate --fit --from DIR --shard i/N: one shard of
// stage 2, from the merged search in DIR.
func fitPredictShard(c *cli.Context, fail func(string, ...any) error) error {
	for _, f := range ensembleFlags {
		if c.IsSet(f) {
			return fail("--%s: with --from the ensemble is the merged search's; give only --shard, --out and --parallel", f)
		}
	}
	if !c.IsSet("shard") {
		return fail("--from: give the shard to run (--shard i/N)")
	}
	shard, err := plan.ParseShard(c.String("shard"))
	if err != nil {
		return fail("--shard %v, as in --shard 2/3", err)
	}
	path := filepath.Join(c.String("from"), sweep.SearchFileName)
	b, err := readFitFile(path)
	if err != nil {
		return fail("--from %v", err)
	}
	search, err := sweep.DecodeSearch(b)
	if err != nil {
		return fail("--from %s: %v", path, err)
	}
	if search.Shard != nil {
		return fail("--from %s: search shard %s; merge every search shard first (qmlsab calibrate --fit --merge)", path, search.Shard)
	}
	dir, err := fitOut(c, fail, true, sweep.PredictFileName)
	if err != nil {
		return err
	}
	ctx, done := fitContext(c)
	defer done()
	pred, err := search.RunPredict(ctx, shard, c.Int("parallel"), fitProgress(c.App.ErrWriter))
	if err != nil {
		return fitFailed(ctx, fail, err)
	}
	if err := store.WriteJSON(filepath.Join(dir, sweep.PredictFileName), pred); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(c.App.Writer, "prediction shard %s: %d trials in %.0f s → %s\nnext: qmlsab calibrate --fit --merge --out DIR <every prediction shard's folder>\n",
		shard, pred.Trials, pred.WallSeconds, filepath.Join(dir, sweep.PredictFileName))
	return nil
}

// fitMerge is calibrate --fit --merge --out DIR SHARD...: search shards
// into the merged search, prediction shards into the ensemble.
func fitMerge(c *cli.Context, fail func(string, ...any) error) error {
	for _, f := range append(slices.Clone(ensembleFlags), "shard", "from") {
		if c.IsSet(f) {
			return fail("--%s: a merge takes the ensemble from its shards; give only --out, --format and the shard folders", f)
		}
	}
	folders := c.Args().Slice()
	if len(folders) == 0 {
		return fail("--merge: give the shard folders to merge")
	}
	var kinds []string
	var blobs [][]byte
	var names []string
	for _, dir := range folders {
		path, b, err := shardFile(dir)
		if err != nil {
			return fail("--merge %v", err)
		}
		kinds, blobs, names = append(kinds, sweep.FileSchema(b)), append(blobs, b), append(names, path)
	}
	for i := range kinds {
		if kinds[i] != kinds[0] {
			return fail("--merge %s: a %s file beside %s's %s: merge one stage's shards at a time", names[i], kinds[i], names[0], kinds[0])
		}
	}
	switch kinds[0] {
	case sweep.SearchSchema:
		files, err := decodeAll(blobs, names, sweep.DecodeSearch)
		if err != nil {
			return fail("--merge %v", err)
		}
		merged, err := sweep.MergeSearch(names, files)
		if err != nil {
			return fail("--merge %v", err)
		}
		dir, err := fitOut(c, fail, true, sweep.SearchFileName)
		if err != nil {
			return err
		}
		if err := store.WriteJSON(filepath.Join(dir, sweep.SearchFileName), merged); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(c.App.Writer, "merged %d search shards: %d points, %d trials → %s\nnext, on each of N hosts: qmlsab calibrate --fit --from %s --shard i/N --out DIR\n",
			len(files), len(merged.Points), merged.Trials, filepath.Join(dir, sweep.SearchFileName), dir)
		return nil
	case sweep.PredictSchema:
		files, err := decodeAll(blobs, names, sweep.DecodePredict)
		if err != nil {
			return fail("--merge %v", err)
		}
		en, spec, err := sweep.MergePredict(names, files)
		if err != nil {
			return fail("--merge %v", err)
		}
		dir, err := fitOut(c, fail, false, sweep.EnsembleFileName, sweep.EnsemblePageName)
		if err != nil {
			return err
		}
		return writeEnsemble(c, fail, en, spec, time.Duration(en.WallSeconds*float64(time.Second)), dir)
	}
	return fail("--merge %s: schema %q is neither a search shard (%s) nor a prediction shard (%s)", names[0], kinds[0], sweep.SearchSchema, sweep.PredictSchema)
}

// fitContext is a fit's context, which a signal ends (interruptContext),
// with the collector tuned for the fit's trials (sweep.TuneGC); done
// restores both.
func fitContext(c *cli.Context) (ctx context.Context, done func()) {
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	restoreGC := sweep.TuneGC()
	return ctx, func() {
		restoreGC()
		stop()
	}
}

// decodeAll decodes each shard's file of one stage; an error names the
// file.
func decodeAll[F any](blobs [][]byte, names []string, decode func([]byte) (F, error)) ([]F, error) {
	var files []F
	for i, b := range blobs {
		f, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", names[i], err)
		}
		files = append(files, f)
	}
	return files, nil
}

// shardFile is the fit file in a shard's folder: its search or its
// predictions (a folder holding both is refused: which one is meant?).
func shardFile(dir string) (string, []byte, error) {
	var found []string
	for _, name := range []string{sweep.SearchFileName, sweep.PredictFileName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = append(found, filepath.Join(dir, name))
		}
	}
	switch len(found) {
	case 0:
		return "", nil, fmt.Errorf("%s: no %s or %s in it (is it a shard's --out?)", dir, sweep.SearchFileName, sweep.PredictFileName)
	case 2:
		return "", nil, fmt.Errorf("%s: holds both %s and %s; give each stage's shards in folders of their own", dir, sweep.SearchFileName, sweep.PredictFileName)
	}
	b, err := readFitFile(found[0])
	return found[0], b, err
}

// readFitFile reads a fit file, refusing one too large to be one.
func readFitFile(path string) ([]byte, error) {
	b, err := store.ReadRunFile(path, sweep.MaxFitFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// fitOut makes the --out folder and checks that the named files there
// may be written (only over an earlier fit's); required says the mode
// writes files only.
func fitOut(c *cli.Context, fail func(string, ...any) error, required bool, names ...string) (string, error) {
	dir := c.String("out")
	if dir == "" {
		if required {
			return "", fail("--out: give the folder for %s", strings.Join(names, " and "))
		}
		return "", nil
	}
	for _, name := range names {
		kind := outputfile.FitJSON
		if strings.HasSuffix(name, ".html") {
			kind = outputfile.HTML
		}
		if err := outputfile.Check(filepath.Join(dir, name), kind); err != nil {
			return "", fail("--out %v", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fail("--out: %v", err)
	}
	return dir, nil
}

// writeEnsemble prints the ensemble (text or JSON) and, with a folder,
// writes fit.json and fit.html there.
func writeEnsemble(c *cli.Context, fail func(string, ...any) error, en *sweep.Ensemble, spec sweep.EnsembleSpec, took time.Duration, dir string) error {
	out := en.Out(spec, took)
	doc, err := out.JSON()
	if err != nil {
		return fail("%v", err)
	}
	if dir != "" {
		page, err := sweep.EnsembleHTML(en, out, toolVersion())
		if err != nil {
			return fail("%v", err)
		}
		if err := store.WriteFileAtomic(filepath.Join(dir, sweep.EnsembleFileName), doc); err != nil {
			return fail("%v", err)
		}
		if err := store.WriteFileAtomic(filepath.Join(dir, sweep.EnsemblePageName), page); err != nil {
			return fail("%v", err)
		}
	}
	if c.String("format") == "json" {
		_, err := c.App.Writer.Write(doc)
		return err
	}
	sweep.WriteEnsemble(c.App.Writer, en, spec, sweep.EnsembleReport{Title: fitTitle, Took: took, Next: "To sweep around the best point: qmlsab sweep --vary NAME=FROM:TO:STEP"})
	if dir != "" {
		fmt.Fprintf(c.App.Writer, "wrote %s and %s\n", filepath.Join(dir, sweep.EnsembleFileName), filepath.Join(dir, sweep.EnsemblePageName))
	}
	return nil
}

// fitFailed is the exit of a fit that stopped: interrupted (nothing
// written) or failed.
func fitFailed(ctx context.Context, fail func(string, ...any) error, err error) error {
	if ctx.Err() != nil {
		return cli.Exit(fmt.Sprintf("qmlsab calibrate: %v; nothing written", context.Cause(ctx)), exitInterrupted)
	}
	return fail("%v", err)
}

// chainsOf lists the chains a search shard runs.
func chainsOf(s plan.Shard, starts int) string {
	var ids []string
	for k := range starts {
		if s.Has(k) {
			ids = append(ids, strconv.Itoa(k+1))
		}
	}
	return strings.Join(ids, ", ")
}

// fitProgress reports a fit's stages on w, one line per stage.
func fitProgress(w io.Writer) func(stage string, done, total int) {
	return func(stage string, done, total int) {
		if done == total {
			fmt.Fprintf(w, "fit: %s: %d trials done\n", stage, total)
		}
	}
}
