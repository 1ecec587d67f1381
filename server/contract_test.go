package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandlersReachKeyspaceOnlyThroughCtx enforces the execution contract
// (doc.go) on the source: no function that takes a *Ctx, other than Ctx's
// own keyspace methods in ctx.go, may touch the server's databases (the
// Server's dbs field, Ctx's ks field) directly. Through Ctx, every write records its effect for the
// durability log and, in lockcheck builds, every access checks the lock.
func TestHandlersReachKeyspaceOnlyThroughCtx(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "ctx.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !takesCtx(fn) {
				continue
			}
			checked++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "dbs" || sel.Sel.Name == "ks") {
					t.Errorf("%s: %s reaches the keyspace around Ctx (%s.%s)", fset.Position(sel.Pos()), fn.Name.Name, exprString(sel.X), sel.Sel.Name)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("only %d functions take a *Ctx: the check is not looking where the handlers are", checked)
	}
}

// takesCtx reports whether fn is a method on *Ctx or has a *Ctx parameter.
func takesCtx(fn *ast.FuncDecl) bool {
	isCtx := func(e ast.Expr) bool {
		st, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		id, ok := st.X.(*ast.Ident)
		return ok && id.Name == "Ctx"
	}
	if fn.Recv != nil && len(fn.Recv.List) > 0 && isCtx(fn.Recv.List[0].Type) {
		return true
	}
	for _, p := range fn.Type.Params.List {
		if isCtx(p.Type) {
			return true
		}
	}
	return false
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "…"
}
