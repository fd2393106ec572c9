// Package vocabcheck finds names of a closed vocabulary written as string
// literals. The results schema's vocabulary (a trial's status, its clock,
// its phases, its events' kinds) is a set of defined string types whose
// values are constants declared in one file; a literal converted to one of
// those types anywhere else compiles, but a typo in it would only make a
// figure silently absent. Literals type-checks packages and reports every
// such conversion, implicit or explicit, by file and line, so a test can
// make the mistake fail the build's tests.
package vocabcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Finding is a literal of a vocabulary type outside the file that
// declares the type.
type Finding struct {
	Pos  token.Position
	Type string // the vocabulary type, as "import/path.Name"
	Expr string // the constant as written: a quoted literal, or a constant's name
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s converted to %s; use its constant", f.Pos, f.Expr, f.Type)
}

// Config says what Literals loads.
type Config struct {
	// Dir is the directory the patterns are resolved in (the module's
	// root, say); empty is the current directory.
	Dir string
	// Overlay replaces or adds files by absolute path, as
	// packages.Config.Overlay does (a test plants a mistake with it).
	Overlay map[string][]byte
}

// Literals type-checks the packages patterns name (without their tests)
// and returns, sorted by position, every untyped string constant (a
// literal, or a constant declared without a type) that becomes one of
// vocabulary's types ("import/path.Name") outside the file declaring that
// type. The empty string is allowed: it is a field's zero value, "not
// recorded", not a name.
func Literals(c Config, vocabulary []string, patterns ...string) ([]Finding, error) {
	cfg := &packages.Config{
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:     c.Dir,
		Overlay: c.Overlay,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("vocabcheck: loading %v: %w", patterns, err)
	}
	var problems []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
	})
	if len(problems) > 0 {
		return nil, fmt.Errorf("vocabcheck: %s", strings.Join(problems, "; "))
	}
	var found []Finding
	for _, p := range pkgs {
		found = append(found, inPackage(p, vocabulary)...)
	}
	slices.SortFunc(found, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Offset, b.Pos.Offset))
	})
	return found, nil
}

// inPackage is Literals for one loaded package.
func inPackage(p *packages.Package, vocabulary []string) []Finding {
	var found []Finding
	for _, file := range p.Syntax {
		path := p.Fset.Position(file.Pos()).Filename
		ast.Inspect(file, func(n ast.Node) bool {
			expr, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			tv, ok := p.TypesInfo.Types[expr]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String || constant.StringVal(tv.Value) == "" {
				return true
			}
			named, ok := tv.Type.(*types.Named)
			if !ok || !untypedSource(p.TypesInfo, expr) {
				return true
			}
			obj := named.Obj()
			name := obj.Pkg().Path() + "." + obj.Name()
			if !slices.Contains(vocabulary, name) || p.Fset.Position(obj.Pos()).Filename == path {
				return true
			}
			found = append(found, Finding{Pos: p.Fset.Position(expr.Pos()), Type: name, Expr: types.ExprString(expr)})
			return false // one finding per literal, not one per operand of "a" + "b"
		})
	}
	return found
}

// untypedSource says expr's value was written untyped: a string literal,
// a constant declared without a type, or an expression of them (go/types
// records such an expression under the type it was converted to).
func untypedSource(info *types.Info, expr ast.Expr) bool {
	switch e := expr.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.ParenExpr:
		return untypedSource(info, e.X)
	case *ast.BinaryExpr:
		return untypedSource(info, e.X) && untypedSource(info, e.Y)
	case *ast.Ident:
		return untypedConst(info.Uses[e])
	case *ast.SelectorExpr:
		return untypedConst(info.Uses[e.Sel])
	}
	return false
}

func untypedConst(obj types.Object) bool {
	c, ok := obj.(*types.Const)
	if !ok {
		return false
	}
	b, ok := c.Type().(*types.Basic)
	return ok && b.Info()&types.IsUntyped != 0
}
