// Command render renders the irqwise Helm chart offline, with Helm's own template engine (Go's
// text/template) and the few Helm functions the chart may use, as Helm (and sprig, its function
// library) defines them: include, fail, default, quote, indent, nindent, list, dict, hasPrefix,
// trimPrefix, regexFind, float64 and mulf. A template using any other function fails to parse
// here, which keeps the chart within that subset. Helm itself is not needed (nor available on
// Debian 12).
//
// YAML is read by tests/k8s/check.sh, which converts Chart.yaml and the values files to JSON
// first (Go's standard library has no YAML parser):
//
//	render -chart CHART_DIR -chart-json Chart.json -values values.json [-values more.json ...]
//	       [-notes NOTES_OUT] [-release irqwise] [-namespace irqwise]
//
// Values files are merged as `helm template -f` merges them: maps key by key, a later file
// winning, lists and scalars replaced whole, null deleting a key. Each rendered template that is
// not empty is printed as Helm prints it, "---\n# Source: CHART/templates/NAME\n" and its text,
// in name order; files starting with "_" define named templates only and NOTES.txt goes to
// -notes. Like Helm, a missing map key renders as nothing ("<no value>" removed) — but here a
// "<no value>" in a template's output is an error: a value printed that does not exist is a typo.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Chart is the part of Chart.yaml templates see as .Chart (Helm's chart.Metadata field names).
type Chart struct {
	Name        string
	Version     string
	AppVersion  string
	Description string
	Type        string
	KubeVersion string
	APIVersion  string
}

// Release is Helm's .Release for `helm template` / a first install.
type Release struct {
	Name      string
	Namespace string
	Service   string
	IsInstall bool
	IsUpgrade bool
	Revision  int
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run() error {
	chartDir := flag.String("chart", "", "the chart's directory")
	chartJSON := flag.String("chart-json", "", "Chart.yaml converted to JSON")
	notesOut := flag.String("notes", "", "where to write the rendered NOTES.txt")
	releaseName := flag.String("release", "irqwise", ".Release.Name")
	namespace := flag.String("namespace", "irqwise", ".Release.Namespace")
	var valueFiles listFlag
	flag.Var(&valueFiles, "values", "values converted to JSON (repeatable; later ones win)")
	flag.Parse()
	if *chartDir == "" || *chartJSON == "" || len(valueFiles) == 0 {
		return errors.New("usage: render -chart DIR -chart-json FILE -values FILE [-values FILE ...]")
	}

	var meta map[string]interface{}
	if err := readJSON(*chartJSON, &meta); err != nil {
		return err
	}
	chart := Chart{
		Name:        str(meta["name"]),
		Version:     str(meta["version"]),
		AppVersion:  str(meta["appVersion"]),
		Description: str(meta["description"]),
		Type:        str(meta["type"]),
		KubeVersion: str(meta["kubeVersion"]),
		APIVersion:  str(meta["apiVersion"]),
	}
	if chart.Name == "" || chart.Version == "" {
		return fmt.Errorf("%s: name and version are required", *chartJSON)
	}

	values := map[string]interface{}{}
	for _, file := range valueFiles {
		var layer map[string]interface{}
		if err := readJSON(file, &layer); err != nil {
			return err
		}
		values = merge(values, layer)
	}

	top := map[string]interface{}{
		"Values":  values,
		"Chart":   chart,
		"Release": Release{Name: *releaseName, Namespace: *namespace, Service: "Helm", IsInstall: true, Revision: 1},
	}

	paths, err := filepath.Glob(filepath.Join(*chartDir, "templates", "*"))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return fmt.Errorf("%s/templates: no templates", *chartDir)
	}

	// One template set, as Helm builds it: every file under its chart-relative name, so that
	// include finds the named templates of _helpers.tpl from any file.
	root := template.New("root").Option("missingkey=zero")
	var includes = map[string]int{}
	root.Funcs(template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			t := root.Lookup(name)
			if t == nil {
				return "", fmt.Errorf("include: no template %q", name)
			}
			if includes[name] > 100 {
				return "", fmt.Errorf("include: %q nested too deeply", name)
			}
			includes[name]++
			defer func() { includes[name]-- }()
			var buf bytes.Buffer
			if err := t.Execute(&buf, data); err != nil {
				return "", err
			}
			return buf.String(), nil
		},
		"fail":       fail,
		"default":    dflt,
		"quote":      quote,
		"indent":     indent,
		"nindent":    nindent,
		"list":       list,
		"dict":       dict,
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"regexFind":  regexFind,
		"float64":    toFloat64,
		"mulf":       mulf,
	})
	var names []string
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name := chart.Name + "/templates/" + filepath.Base(path)
		if _, err := root.New(name).Parse(string(text)); err != nil {
			return err
		}
		names = append(names, name)
	}

	var out bytes.Buffer
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		text, err := execute(root, name, top)
		if err != nil {
			return err
		}
		if base == "NOTES.txt" {
			if *notesOut != "" {
				if err := os.WriteFile(*notesOut, []byte(text), 0o644); err != nil {
					return err
				}
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, strings.TrimRight(text, "\n"))
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

func execute(root *template.Template, name string, data interface{}) (string, error) {
	var buf bytes.Buffer
	if err := root.ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	text := buf.String()
	if i := strings.Index(text, "<no value>"); i >= 0 {
		line := strings.Count(text[:i], "\n") + 1
		return "", fmt.Errorf("%s: output line %d prints a value that does not exist", name, line)
	}
	return text, nil
}

func readJSON(path string, into interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func str(v interface{}) string {
	if v == nil {
		return ""
	}
	return strval(v)
}

// merge layers over base like Helm's coalescing of -f files: maps key by key, the rest replaced,
// null deleting the key.
func merge(base, layer map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range layer {
		if v == nil {
			delete(out, k)
			continue
		}
		if lm, ok := v.(map[string]interface{}); ok {
			if bm, ok := out[k].(map[string]interface{}); ok {
				out[k] = merge(bm, lm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// The Helm (sprig) functions, with sprig's semantics.

// dflt is sprig's default: given when given is set and not empty, else d.
func dflt(d interface{}, given ...interface{}) interface{} {
	if len(given) == 0 || empty(given[0]) {
		return d
	}
	return given[0]
}

// empty is sprig's notion of empty: nil, zero numbers, false, empty strings, maps and lists.
func empty(given interface{}) bool {
	g := reflect.ValueOf(given)
	if !g.IsValid() {
		return true
	}
	switch g.Kind() {
	case reflect.Array, reflect.Slice, reflect.Map, reflect.String:
		return g.Len() == 0
	case reflect.Bool:
		return !g.Bool()
	case reflect.Complex64, reflect.Complex128:
		return g.Complex() == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return g.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return g.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return g.Float() == 0
	case reflect.Struct:
		return false
	default:
		return g.IsNil()
	}
}

// quote is sprig's quote: each non-nil argument as a Go-quoted string, space separated.
func quote(str ...interface{}) string {
	out := make([]string, 0, len(str))
	for _, s := range str {
		if s != nil {
			out = append(out, fmt.Sprintf("%q", strval(s)))
		}
	}
	return strings.Join(out, " ")
}

func strval(v interface{}) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprintf("%v", v)
	}
}

func indent(spaces int, v string) string {
	pad := strings.Repeat(" ", spaces)
	return pad + strings.Replace(v, "\n", "\n"+pad, -1)
}

func nindent(spaces int, v string) string {
	return "\n" + indent(spaces, v)
}

// fail is Helm's fail: the render stops with msg as its error.
func fail(msg string) (string, error) {
	return "", errors.New(msg)
}

// list is sprig's list: its arguments as a list.
func list(v ...interface{}) []interface{} {
	return v
}

// dict is sprig's dict: key, value, key, value ... as a map (keys as strings; a last key
// without value maps to "").
func dict(v ...interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for i := 0; i < len(v); i += 2 {
		key := strval(v[i])
		if i+1 >= len(v) {
			out[key] = ""
			continue
		}
		out[key] = v[i+1]
	}
	return out
}

// regexFind is sprig's regexFind: the leftmost match of regex in s ("" for none); an invalid
// regex is an error (sprig panics, which the template engine reports as an error).
func regexFind(regex string, s string) (string, error) {
	r, err := regexp.Compile(regex)
	if err != nil {
		return "", err
	}
	return r.FindString(s), nil
}

// toFloat64 is sprig's float64 (spf13/cast's ToFloat64): numbers converted, strings parsed,
// anything else or a string that is no number 0.
func toFloat64(v interface{}) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case uint:
		return float64(v)
	case uint64:
		return float64(v)
	case bool:
		if v {
			return 1
		}
		return 0
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0
		}
		return f
	default:
		return 0
	}
}

// mulf is sprig's mulf: the product of the arguments as float64s, computed in decimal (sprig
// uses shopspring/decimal from each float's shortest representation), so 1.1 * 1000 is 1100.
func mulf(a interface{}, v ...interface{}) float64 {
	product := decimalOf(toFloat64(a))
	for _, b := range v {
		product.Mul(product, decimalOf(toFloat64(b)))
	}
	f, _ := product.Float64()
	return f
}

// decimalOf is f's shortest decimal representation as an exact rational.
func decimalOf(f float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return new(big.Rat)
	}
	return r
}
