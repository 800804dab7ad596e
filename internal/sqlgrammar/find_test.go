package sqlgrammar_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// queryMethods are database/sql's methods that send a query, with the index
// of their query argument. A method of another type by the same name counts
// only when that argument is a string (go-redis's Pipeline.Exec(ctx) is not).
var queryMethods = map[string]int{
	"ExecContext": 1, "QueryContext": 1, "QueryRowContext": 1, "PrepareContext": 1,
	"Exec": 0, "Query": 0, "QueryRow": 0, "Prepare": 0,
}

// queryFuncs are the module's functions that run the query their caller
// names (internal/sqlrows), with the index of their query argument: a call
// of one is followed as a call of queryMethods is, and the package they are
// in is not walked, as the query it sends is its callers'.
var queryFuncs = map[string]int{
	"github.com/flashsale-dev/flashsale/internal/sqlrows.Each": 2,
	"github.com/flashsale-dev/flashsale/internal/sqlrows.List": 2,
}

// queryIndex reports the index of the query argument of call, a call of a
// queryMethods method or a queryFuncs function.
func (f *finder) queryIndex(call *ast.CallExpr) (int, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return 0, false
	}
	if fn, ok := f.p.Info.Uses[sel.Sel].(*types.Func); ok {
		if qi, ok := queryFuncs[fn.Origin().FullName()]; ok {
			return qi, len(call.Args) > qi
		}
	}
	qi, ok := queryMethods[sel.Sel.Name]
	if !ok {
		return 0, false
	}
	s := f.p.Info.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return 0, false
	}
	params := s.Type().(*types.Signature).Params()
	return qi, params.Len() > qi && isString(params.At(qi).Type()) && len(call.Args) > qi
}

// looksLikeSQL matches a string constant that reads as a whole statement,
// wherever it is in the code: it must parse, or be part of a statement that
// does (a fragment a builder starts with).
var looksLikeSQL = regexp.MustCompile(`^\s*(?:--[^\n]*\n\s*)*(?:SELECT\s|INSERT\s+INTO\s|REPLACE\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|` +
	`CREATE\s+(?:TABLE|DATABASE|INDEX)\s|ALTER\s+TABLE\s|DROP\s+(?:TABLE|DATABASE)\s|TRUNCATE\s|SHOW\s|WITH\s)`)

// statement is one query a call site may send.
type statement struct {
	SQL  string
	Site string // file:line of the call, and the query argument
}

// pkgCode is one type-checked package of the module.
type pkgCode struct {
	Rel   string // directory relative to the module root, e.g. pkg/store
	Fset  *token.FileSet
	Files []*ast.File
	Info  *types.Info
	Pkg   *types.Package
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Standard   bool
	DepOnly    bool
	Module     *struct{ Path, Dir string }
	Error      *struct{ Err string }
}

// loadModule type-checks every package of the module (its non-test files),
// importing their dependencies from the export data `go list -export` built,
// and returns the packages, the import lookup it used and the packages it
// could not check (they do not build).
//
// The load is the package's slow part (a `go list -export` of the module
// and a type-check of every package, 15-20 s under -race): it is made once
// and shared by the tests that need it.
func loadModule(t *testing.T) (pkgs []*pkgCode, lookup func(string) (io.ReadCloser, error), broken []string) {
	t.Helper()
	moduleOnce.Do(func() {
		ok := t.Run("load the module", func(t *testing.T) {
			moduleLoad.pkgs, moduleLoad.lookup, moduleLoad.broken = loadModuleNow(t)
		})
		moduleLoad.ok = ok
	})
	if !moduleLoad.ok {
		t.Fatal("loading the module failed (see the first test that loaded it)")
	}
	return moduleLoad.pkgs, moduleLoad.lookup, moduleLoad.broken
}

var (
	moduleOnce sync.Once
	moduleLoad struct {
		pkgs   []*pkgCode
		lookup func(string) (io.ReadCloser, error)
		broken []string
		ok     bool
	}
)

func loadModuleNow(t *testing.T) (pkgs []*pkgCode, lookup func(string) (io.ReadCloser, error), broken []string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	// -e: a package that does not build is reported below, and the others
	// are still checked.
	args := []string{"list", "-e", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Export,Standard,DepOnly,Module,Error"}
	if raceBuild {
		args = append(args, "-race") // reuse this build's export data (race_test.go)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var own []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && p.Module != nil && p.Module.Dir == root {
			own = append(own, p)
		}
	}
	lookup = func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	}
	for _, p := range own {
		rel, _ := filepath.Rel(root, p.Dir)
		if p.Error != nil {
			broken = append(broken, fmt.Sprintf("%s does not build, so its SQL is not checked: %s", rel, p.Error.Err))
			continue
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s/%s: %v", rel, name, err)
			}
			files = append(files, f)
		}
		pc, err := checkPackage(filepath.ToSlash(rel), p.ImportPath, fset, files, lookup)
		if err != nil {
			broken = append(broken, fmt.Sprintf("type-check %s, so its SQL is not checked: %v", rel, err))
			continue
		}
		pkgs = append(pkgs, pc)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Rel < pkgs[j].Rel })
	return pkgs, lookup, broken
}

// checkPackage type-checks one package's parsed files.
func checkPackage(rel, importPath string, fset *token.FileSet, files []*ast.File, lookup func(string) (io.ReadCloser, error)) (*pkgCode, error) {
	pc := &pkgCode{Rel: rel, Fset: fset, Files: files, Info: &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{},
	}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	var err error
	pc.Pkg, err = conf.Check(importPath, fset, files, pc.Info)
	return pc, err
}

// finder follows query arguments in one package to the strings they can be.
type finder struct {
	p        *pkgCode
	standIns map[string][]string
	used     map[string]bool
}

// key is how standins_test.go names an expression: the package's directory,
// the function it is in and the expression as go/types prints it, e.g.
// "pkg/store.InsertOrders: sb.String()".
func (f *finder) key(e ast.Expr) string {
	return f.p.Rel + "." + f.funcOf(e) + ": " + types.ExprString(e)
}

// funcOf names the function declaration n is in ("Type.Method" for a
// method), or "var" outside any.
func (f *finder) funcOf(n ast.Node) string {
	for _, file := range f.p.Files {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || n.Pos() < fd.Pos() || n.End() > fd.End() {
				continue
			}
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				t := fd.Recv.List[0].Type
				if st, ok := t.(*ast.StarExpr); ok {
					t = st.X
				}
				if ix, ok := t.(*ast.IndexExpr); ok {
					t = ix.X
				}
				return types.ExprString(t) + "." + fd.Name.Name
			}
			return fd.Name.Name
		}
	}
	return "var"
}

func (f *finder) pos(n ast.Node) string {
	p := f.p.Fset.Position(n.Pos())
	return fmt.Sprintf("%s/%s:%d", f.p.Rel, filepath.Base(p.Filename), p.Line)
}

// queries returns the statements of every query call of the package, and an
// error for each query argument it cannot follow.
func (f *finder) queries() (stmts []statement, unresolved []string) {
	for name := range queryFuncs {
		if strings.HasPrefix(name, f.p.Pkg.Path()+".") {
			return nil, nil
		}
	}
	for _, file := range f.p.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			qi, ok := f.queryIndex(call)
			if !ok {
				return true
			}
			arg := call.Args[qi]
			vals, err := f.resolve(arg, 0)
			site := f.pos(call) + " " + types.ExprString(arg)
			if err != nil {
				unresolved = append(unresolved, fmt.Sprintf("%s: %v", site, err))
				return true
			}
			for _, v := range vals {
				stmts = append(stmts, statement{SQL: v, Site: site})
			}
			return true
		})
	}
	return stmts, unresolved
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

// resolve returns every string e can be: a constant (go/types folds constant
// concatenations), a concatenation of resolvable parts, a stand-in from
// standins_test.go, a local variable all of whose assignments resolve
// (including a range over a literal list), a package variable's initializer,
// or a parameter of a function whose every call in the package passes a
// resolvable argument.
func (f *finder) resolve(e ast.Expr, depth int) ([]string, error) {
	if depth > 20 {
		return nil, fmt.Errorf("too deep")
	}
	if tv, ok := f.p.Info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return []string{constant.StringVal(tv.Value)}, nil
	}
	if v, ok := f.standIns[f.key(e)]; ok {
		f.used[f.key(e)] = true
		return v, nil
	}
	if call, ok := e.(*ast.CallExpr); ok {
		if id, ok := call.Fun.(*ast.Ident); ok {
			if fn, ok := f.p.Info.Uses[id].(*types.Func); ok && fn.Pkg() == f.p.Pkg {
				k := f.p.Rel + "." + fn.Name()
				if v, ok := standInCalls[k]; ok {
					f.used[k] = true
					return v, nil
				}
			}
		}
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return f.resolve(e.X, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			break
		}
		xs, err := f.resolve(e.X, depth+1)
		if err != nil {
			return nil, err
		}
		ys, err := f.resolve(e.Y, depth+1)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, x := range xs {
			for _, y := range ys {
				out = append(out, x+y)
			}
		}
		return out, nil
	case *ast.Ident:
		v, ok := f.p.Info.Uses[e].(*types.Var)
		if !ok {
			break
		}
		return f.resolveVar(v, depth)
	}
	return nil, fmt.Errorf("%s is computed at run time: give it a stand-in in standins_test.go (key %q)", types.ExprString(e), f.key(e))
}

// resolveVar follows a variable to the values assigned to it.
func (f *finder) resolveVar(v *types.Var, depth int) ([]string, error) {
	if fn, idx := f.paramOf(v); fn != nil {
		return f.resolveParam(fn, idx, depth)
	}
	var rhs, suffixes []ast.Expr
	var bad error
	for _, file := range f.p.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && f.objOf(id) == v {
						switch {
						case len(n.Lhs) != len(n.Rhs):
							bad = fmt.Errorf("%s: %s is assigned a function's result, which the test does not follow", f.pos(n), v.Name())
						case n.Tok == token.ASSIGN || n.Tok == token.DEFINE:
							rhs = append(rhs, n.Rhs[i])
						case n.Tok == token.ADD_ASSIGN:
							suffixes = append(suffixes, n.Rhs[i])
						default:
							bad = fmt.Errorf("%s: %s is changed in a way the test does not follow", f.pos(n), v.Name())
						}
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if f.objOf(id) == v && i < len(n.Values) {
						rhs = append(rhs, n.Values[i])
					}
				}
			case *ast.RangeStmt:
				if id, ok := n.Value.(*ast.Ident); ok && f.objOf(id) == v {
					elts, err := f.elements(n.X)
					if err != nil {
						bad = err
					}
					rhs = append(rhs, elts...)
				}
			}
			return true
		})
	}
	if bad != nil {
		return nil, bad
	}
	if len(rhs) == 0 {
		return nil, fmt.Errorf("%s has no value the test can follow: give it a stand-in in standins_test.go", v.Name())
	}
	var out []string
	for _, r := range rhs {
		vals, err := f.resolve(r, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	// Each += may or may not have run (the walk does not follow control
	// flow), so every value with and without each suffix, in code order.
	for _, sfx := range suffixes {
		vals, err := f.resolve(sfx, depth+1)
		if err != nil {
			return nil, err
		}
		with := out
		for _, o := range out {
			for _, v := range vals {
				with = append(with, o+v)
			}
		}
		out = with
	}
	return out, nil
}

// elements returns the elements of a ranged-over list literal, or of the
// package variable it names.
func (f *finder) elements(x ast.Expr) ([]ast.Expr, error) {
	if id, ok := x.(*ast.Ident); ok {
		if v, ok := f.p.Info.Uses[id].(*types.Var); ok {
			x = f.initializer(v)
		}
	}
	lit, ok := x.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("range over %s: not a list literal", types.ExprString(x))
	}
	return lit.Elts, nil
}

// initializer is the expression a package variable is declared with.
func (f *finder) initializer(v *types.Var) ast.Expr {
	for _, file := range f.p.Files {
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, id := range vs.Names {
					if f.p.Info.Defs[id] == v && i < len(vs.Values) {
						return vs.Values[i]
					}
				}
			}
		}
	}
	return nil
}

func (f *finder) objOf(id *ast.Ident) types.Object {
	if o := f.p.Info.Defs[id]; o != nil {
		return o
	}
	return f.p.Info.Uses[id]
}

// paramOf reports the function of the package that v is a parameter of.
func (f *finder) paramOf(v *types.Var) (*types.Func, int) {
	for _, file := range f.p.Files {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			fn, _ := f.p.Info.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			params := fn.Type().(*types.Signature).Params()
			for i := range params.Len() {
				if params.At(i) == v {
					return fn, i
				}
			}
		}
	}
	return nil, 0
}

// resolveParam follows parameter idx of fn to the arguments of its calls.
func (f *finder) resolveParam(fn *types.Func, idx int, depth int) ([]string, error) {
	var out []string
	var bad error
	calls := 0
	for _, file := range f.p.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || bad != nil {
				return true
			}
			var id *ast.Ident
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				id = fun
			case *ast.SelectorExpr:
				id = fun.Sel
			}
			if id == nil || f.p.Info.Uses[id] != fn || idx >= len(call.Args) {
				return true
			}
			calls++
			vals, err := f.resolve(call.Args[idx], depth+1)
			if err != nil {
				bad = fmt.Errorf("%s: argument %d of %s: %w", f.pos(call), idx+1, fn.Name(), err)
				return true
			}
			out = append(out, vals...)
			return true
		})
	}
	if bad != nil {
		return nil, bad
	}
	if calls == 0 {
		return nil, fmt.Errorf("%s's parameter %d comes from outside its package: give it a stand-in in standins_test.go", fn.Name(), idx+1)
	}
	return out, nil
}

// sqlConstants returns every string constant of the package that reads as a
// statement (looksLikeSQL), outermost constant expressions only.
func (f *finder) sqlConstants() []statement {
	var out []statement
	for _, file := range f.p.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			tv, ok := f.p.Info.Types[e]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
				return true
			}
			if s := constant.StringVal(tv.Value); looksLikeSQL.MatchString(s) {
				out = append(out, statement{SQL: s, Site: f.pos(e)})
			}
			return false // its parts are not statements of their own
		})
	}
	return out
}
