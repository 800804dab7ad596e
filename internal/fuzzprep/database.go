package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/schema"
)

// dbName keeps the name safe to splice into DDL.
var dbName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// database drops and recreates database NAME on the server of
// FLASHSALE_MYSQL_DSN, applies the migrations and prints a DSN for it: the
// contract run's items and orders live apart from the shared database, and
// each run starts from nothing, so what it finds does not depend on the last.
func database(ctx context.Context, args []string, out io.Writer) error {
	var common config.Common
	fs := flag.NewFlagSet("fuzzprep database", flag.ContinueOnError)
	if err := config.Parse(fs, args, &common); err != nil {
		return err
	}
	if fs.NArg() != 1 || !dbName.MatchString(fs.Arg(0)) {
		return fmt.Errorf("database: want one name of [a-z0-9_], got %q", fs.Args())
	}
	name := fs.Arg(0)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, common.DSN(), 1, common.StoreTimeout)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer admin.Close()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("database: %s: %w", q, err)
		}
	}
	cfg, err := mysql.ParseDSN(common.MySQLDSN)
	if err != nil {
		return fmt.Errorf("database: FLASHSALE_MYSQL_DSN: %w", err)
	}
	cfg.DBName = name
	common.MySQLDSN = cfg.FormatDSN()
	db, err := store.Open(ctx, common.DSN(), 2, common.StoreTimeout)
	if err != nil {
		return fmt.Errorf("database: open %s: %w", name, err)
	}
	defer db.Close()
	if _, err := migrate.Apply(ctx, db, schema.FS, slog.New(slog.DiscardHandler)); err != nil {
		return fmt.Errorf("database: migrate %s: %w", name, err)
	}
	_, err = fmt.Fprintln(out, common.MySQLDSN)
	return err
}
