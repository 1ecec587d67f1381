package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/turnstile/turnstile/persistence"
)

// checkAOF implements `turnstile check-aof [--fix] [--force] FILE`: report
// on a log or snapshot file, and with --fix cut off a torn tail (with
// --force also everything from the first damaged record on).
func checkAOF(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check-aof", flag.ContinueOnError)
	fix := fs.Bool("fix", false, "truncate a torn last record")
	force := fs.Bool("force", false, "with --fix, also truncate at damage in the middle (loses the records after it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: turnstile check-aof [--fix [--force]] FILE")
	}
	path := fs.Arg(0)
	osfs := persistence.OSFS{}
	var (
		rep persistence.Report
		err error
	)
	switch {
	case *fix && *force:
		rep, err = persistence.FixForce(osfs, path)
	case *fix:
		rep, err = persistence.Fix(osfs, path)
	default:
		rep, err = persistence.Check(osfs, path)
	}
	fmt.Fprintln(out, rep.String())
	if err != nil {
		return err
	}
	if !rep.OK() && !rep.Repaired() {
		return errors.New("the file is damaged (see above)")
	}
	return nil
}
