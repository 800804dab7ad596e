package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitAPI         = 1
	ExitUsage       = 2
	ExitAuditFailed = 3
	ExitUnreachable = 4
)

// DefaultServer is the ingress of the local stack (deploy/local/run.sh's
// FLASHSALE_HTTP_ADDR).
const DefaultServer = "http://127.0.0.1:8080"

// exitError carries an exit code to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// Env is what the commands read from outside: the environment and the
// streams (tests give their own).
type Env struct {
	Lookup func(string) (string, bool)
	Stdout io.Writer
	Stderr io.Writer
	// Sleep waits between refreshes of sale watch (tests pass a no-op).
	Sleep func(time.Duration)
}

type options struct {
	env     Env
	server  string
	token   string
	output  string
	timeout time.Duration
}

// Main runs flashsalectl with args and returns its exit code.
func Main(args []string, env Env) int {
	if env.Lookup == nil {
		env.Lookup = os.LookupEnv
	}
	if env.Sleep == nil {
		env.Sleep = time.Sleep
	}
	root, o := newRoot(env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(env.Stderr, "flashsalectl:", redact(err.Error(), o.resolvedToken()))
	var ee *exitError
	var ae *APIError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ae):
		return ExitAPI
	case errors.Is(err, errUnreachable):
		return ExitUnreachable
	case isUsage(err):
		return ExitUsage
	}
	return ExitAPI
}

// isUsage tells cobra's own argument and flag errors.
func isUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument", "flag needs"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// redact replaces every occurrence of tok by its first characters: no
// error or log line shows a whole token.
func redact(s, tok string) string {
	if tok == "" {
		return s
	}
	return strings.ReplaceAll(s, tok, shortToken(tok))
}

func shortToken(tok string) string {
	if len(tok) <= 8 {
		return "<token>"
	}
	return tok[:8] + "…(" + fmt.Sprint(len(tok)) + " chars)"
}

func (o *options) resolvedToken() string {
	if o.token != "" {
		return o.token
	}
	v, _ := o.env.Lookup("FLASHSALE_TOKEN")
	return v
}

func (o *options) resolvedServer() string {
	if o.server != "" {
		return o.server
	}
	if v, ok := o.env.Lookup("FLASHSALE_URL"); ok && v != "" {
		return v
	}
	return DefaultServer
}

func newRoot(env Env) (*cobra.Command, *options) {
	o := &options{env: env}
	root := &cobra.Command{
		Use:   "flashsalectl",
		Short: "Operate flashsale sales through the ingress's admin API",
		Long: `flashsalectl operates flashsale through the ingress's admin API: items (sales),
their audit, a live view of a running sale, an item's waiting room and its
published transcript, and the consumers' dead-letter topic.
Every command but "token" is an HTTP call with an admin bearer token ("queue
transcript" reads a public answer and needs none); "token" mints one for a
local stack.

Server: --server, else $FLASHSALE_URL, else ` + DefaultServer + `.
Token:  --token, else $FLASHSALE_TOKEN (a local one: flashsalectl token --admin).

Exit codes: 0 ok; 1 the API answered an error (code and message printed);
2 usage (flags, arguments, no token); 3 the audit is not ok, or a queue
transcript does not verify; 4 the server could not be reached or did not
answer as the API.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if o.output != "table" && o.output != "json" {
				return usageErr("-o %q: expected json or table", o.output)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: ExitUsage, err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&o.server, "server", "", "ingress URL (default $FLASHSALE_URL or "+DefaultServer+")")
	pf.StringVar(&o.token, "token", "", "admin bearer token (default $FLASHSALE_TOKEN)")
	pf.StringVarP(&o.output, "output", "o", "table", "output of reads: table or json")
	pf.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound of one API call")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(itemsCmd(o), auditCmd(o), saleCmd(o), queueCmd(o), dlqCmd(o), tokenCmd(o))
	return root, o
}
