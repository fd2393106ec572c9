package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// knownFlagInLibraryError are the library texts that still name a flag,
// by file and flag, each with why it stays: a debt, listed so that it
// is seen, not a pattern to follow.
var knownFlagInLibraryError = map[string]string{
	// A remote target's refusal becomes the trial's recorded reason,
	// and qmlsab run shows the flag only through that reason: naming
	// the setting there needs the refusal carried typed to the command.
	"internal/mongoclient/guard.go --allow-remote": "the run's output names the flag only through the trial's reason",
}

// flagMention is a long option in a text: --name, whole (--setParameter
// is not --set), not inside a word or after a third dash.
var flagMention = regexp.MustCompile(`(?:^|[^-\w])--([\w-]+)`)

// No library's error names a flag of this command line (nor does a
// reason a run records, or a warning a report writes): results and
// library callers outlive the flags' names. A library names its own
// field (internal/field) and fieldFlags calls it by its flag; a text that
// is no error of one command words the setting. The flags are this
// application's; the texts are the string literals of every error
// (fmt.Errorf, errors.New, field.Errorf, a parser's errf), of every
// fmt.Sprintf, and of every Error method, in the non-test Go files
// outside cmd/ (scripts/ are programs with flags of their own).
func TestNoLibraryErrorNamesAFlag(t *testing.T) {
	flags := map[string]bool{}
	for _, fl := range newApp().Flags {
		for _, n := range fl.Names() {
			flags[n] = true
		}
	}
	for _, fls := range commandFlags() {
		for _, fl := range fls {
			for _, n := range fl.Names() {
				flags[n] = true
			}
		}
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == "cmd", rel == "scripts", d.Name() == "testdata", strings.HasPrefix(d.Name(), ".") && rel != ".":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, lit := range errorTexts(file) {
			text, err := strconv.Unquote(lit.Value)
			if err != nil {
				continue
			}
			for _, m := range flagMention.FindAllStringSubmatch(text, -1) {
				key := filepath.ToSlash(rel) + " --" + m[1]
				if !flags[m[1]] || knownFlagInLibraryError[key] != "" {
					continue
				}
				t.Errorf("%s: %s names the flag --%s: name the library's field (internal/field) or the setting", fset.Position(lit.Pos()), lit.Value, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// errorTexts are the string literals of a file's errors, fmt.Sprintf
// calls and Error methods.
func errorTexts(file *ast.File) []*ast.BasicLit {
	var lits []*ast.BasicLit
	collect := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				lits = append(lits, lit)
			}
			return true
		})
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && n.Name.Name == "Error" && n.Body != nil {
				collect(n.Body)
				return false
			}
		case *ast.CallExpr:
			if errorCall(n.Fun) {
				for _, a := range n.Args {
					collect(a)
				}
			}
		}
		return true
	})
	return lits
}

// errorCall says fun makes an error's or a reason's text.
func errorCall(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == "errf" || f.Name == "errorf"
	case *ast.SelectorExpr:
		pkg, _ := f.X.(*ast.Ident)
		switch {
		case f.Sel.Name == "Errorf" || f.Sel.Name == "errf" || f.Sel.Name == "errorf":
			return true
		case pkg != nil && pkg.Name == "fmt" && f.Sel.Name == "Sprintf":
			return true
		case pkg != nil && pkg.Name == "errors" && f.Sel.Name == "New":
			return true
		}
	}
	return false
}
