package deploy

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// envSource is one variable of a container and where its value comes from.
type envSource struct {
	Value  string                    // a literal's or a ConfigMap key's value
	Secret *corev1.SecretKeySelector // set when the value is in a Secret
	From   string                    // for messages
}

// containerEnv builds a container's environment as the kubelet would:
// envFrom ConfigMaps in order, then env. A variable set twice is an error
// here (the kubelet takes the last), since only one of the two can be meant.
// used collects the ConfigMap keys that reach a container.
func containerEnv(set *k8sSet, c corev1.Container, used map[string]map[string]bool) (map[string]envSource, error) {
	env := map[string]envSource{}
	var errs []error
	put := func(k string, s envSource) {
		if prev, dup := env[k]; dup {
			errs = append(errs, fmt.Errorf("%s is set by %s and by %s", k, prev.From, s.From))
		}
		env[k] = s
	}
	configMapKey := func(name, key string) (string, bool) {
		cm, ok := set.ConfigMaps[name]
		if !ok {
			return "", false
		}
		v, ok := cm.Data[key]
		if ok {
			if used[name] == nil {
				used[name] = map[string]bool{}
			}
			used[name][key] = true
		}
		return v, ok
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil || ef.Prefix != "" {
			errs = append(errs, errors.New("envFrom other than a whole ConfigMap (Secrets are referenced key by key)"))
			continue
		}
		cm, ok := set.ConfigMaps[ef.ConfigMapRef.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("envFrom names ConfigMap %s, which the build does not make", ef.ConfigMapRef.Name))
			continue
		}
		for k := range cm.Data {
			v, _ := configMapKey(cm.Name, k)
			put(k, envSource{Value: v, From: "ConfigMap " + cm.Name})
		}
	}
	for _, e := range c.Env {
		switch vf := e.ValueFrom; {
		case vf == nil:
			put(e.Name, envSource{Value: e.Value, From: "a literal"})
		case vf.ConfigMapKeyRef != nil:
			ref := vf.ConfigMapKeyRef
			v, ok := configMapKey(ref.Name, ref.Key)
			if !ok || (ref.Optional != nil && *ref.Optional) {
				errs = append(errs, fmt.Errorf("%s: ConfigMap %s has no key %s, or the reference is optional", e.Name, ref.Name, ref.Key))
				continue
			}
			put(e.Name, envSource{Value: v, From: "ConfigMap " + ref.Name + " key " + ref.Key})
		case vf.SecretKeyRef != nil:
			put(e.Name, envSource{Secret: vf.SecretKeyRef, From: "Secret " + vf.SecretKeyRef.Name + " key " + vf.SecretKeyRef.Key})
		default:
			errs = append(errs, fmt.Errorf("%s: a valueFrom this test does not resolve", e.Name))
		}
	}
	return env, errors.Join(errs...)
}

// secretSetting reports whether a setting holds a credential, by the rule
// pkg/config uses to redact it from error messages.
func secretSetting(name string) bool {
	return strings.Contains(name, "SECRET") || strings.Contains(name, "DSN") || strings.Contains(name, "PASSWORD")
}

// secretSamples stand in for what the Secret holds in a cluster, so that the
// settings around them can be parsed and validated as at start-up.
var secretSamples = map[string]string{
	"FLASHSALE_JWT_SECRET": "a-sample-secret-for-the-manifest-test",
	"FLASHSALE_MYSQL_DSN":  "flashsale:sample@tcp(mysql:3306)/flashsale",
	// The example overlay logs in to SASL_SSL brokers.
	"FLASHSALE_KAFKA_SASL_PASSWORD": "a-sample-kafka-password",
}

// deployable is one of this repository's commands as a container runs it,
// with the settings that command reads (pkg/config).
type deployable struct {
	bin    string
	names  map[string]bool // the FLASHSALE_* variables it reads
	common *config.Common
	comp   config.Registerer
}

// deployableOf finds the command a container runs. The command must be the
// binary alone: settings come from the environment, where they are checked.
func deployableOf(c corev1.Container) (*deployable, error) {
	if len(c.Command) != 1 || len(c.Args) != 0 {
		return nil, fmt.Errorf("command %q args %q: expected one of /usr/local/bin/<command>, settings in the environment", c.Command, c.Args)
	}
	bin, ok := strings.CutPrefix(c.Command[0], "/usr/local/bin/")
	if _, err := os.Stat(filepath.Join("..", bin, "main.go")); !ok || err != nil {
		return nil, fmt.Errorf("runs %s, which is not a command of this repository", c.Command[0])
	}
	fresh := func() (*config.Common, config.Registerer) {
		switch bin {
		case "ingress":
			return &config.Common{}, &config.Ingress{}
		case "consumer":
			return &config.Common{}, &config.Consumer{}
		case "reaper":
			return &config.Common{}, &config.Reaper{}
		case "setup":
			return &config.Common{}, &config.Setup{}
		}
		return nil, nil
	}
	common, comp := fresh()
	if comp == nil {
		return nil, fmt.Errorf("runs %s, which is not a deployable", bin)
	}
	d := &deployable{bin: bin, names: map[string]bool{}}
	for _, n := range config.Names(common, comp) {
		d.names[n] = true
	}
	d.common, d.comp = fresh() // Names filled the first pair with defaults
	return d, nil
}

// parse reads env as the command does at start-up, defaults for what env
// does not set, and returns the error start-up would stop with.
func (d *deployable) parse(env map[string]envSource) error {
	fs := flag.NewFlagSet(d.bin, flag.ContinueOnError)
	d.common.RegisterFlags(fs)
	d.comp.RegisterFlags(fs)
	var errs []error
	lookup := func(name string) (string, bool) {
		s, ok := env[name]
		if ok && s.Secret != nil {
			v, ok := secretSamples[name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s comes from a Secret and secretSamples has no stand-in for it", name))
			}
			return v, ok
		}
		return s.Value, ok
	}
	errs = append(errs, config.ApplyEnv(fs, lookup), d.common.Validate(), d.comp.Validate())
	if r, ok := d.comp.(*config.Reaper); ok {
		errs = append(errs, r.ValidateWith(*d.common))
	}
	return errors.Join(errs...)
}

// listens returns the addresses the command listens on, by setting.
func (d *deployable) listens() map[string]string {
	switch c := d.comp.(type) {
	case *config.Ingress:
		return map[string]string{"FLASHSALE_HTTP_ADDR": c.HTTPAddr, "FLASHSALE_METRICS_ADDR": c.MetricsAddr}
	case *config.Consumer:
		return map[string]string{"FLASHSALE_METRICS_ADDR": c.MetricsAddr}
	case *config.Reaper:
		return map[string]string{"FLASHSALE_METRICS_ADDR": c.MetricsAddr}
	}
	return nil
}

// runsOnService and exitGrace read the deadline each command's main.go
// sets on its own shutdown: pkg/service bounds it (ops.ExitAfter) at
// FLASHSALE_SHUTDOWN_TIMEOUT plus the Deployable's ExitGrace, which the
// ingress sets for the work after its API's drain.
var (
	runsOnService = regexp.MustCompile(`service\.Main\(service\.Deployable\{`)
	exitGrace     = regexp.MustCompile(`ExitGrace:\s*(\d+) \* time\.Second`)
)

// exitBound is the longest the command may take to stop after SIGTERM
// before it exits on its own, read from its main.go so the grace periods
// follow the code.
func (d *deployable) exitBound() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("..", d.bin, "main.go"))
	if err != nil {
		return 0, err
	}
	if !runsOnService.Match(b) {
		return 0, fmt.Errorf("%s/main.go: no service.Main(service.Deployable{...}): update exitBound", d.bin)
	}
	margin := 0
	if m := exitGrace.FindSubmatch(b); m != nil {
		margin, _ = strconv.Atoi(string(m[1]))
	}
	return d.common.ShutdownTimeout + time.Duration(margin)*time.Second, nil
}
