// rpcprof-profile-read: a profile as its consumers' own readers see it, printed as JSON for rpcprof's
// tests. pprof files go through google/pprof's profile package (Parse, which checks the profile too);
// OTLP profiles (protobuf, or OTLP JSON for a FILE ending in .json, unknown fields refused) through the
// Collector's pdata/pprofile, the reader the Collector itself uses. Each sample's frames are printed root
// first, with its values and its labels (pprof's, by key) or attributes (OTLP's, in the file's order) as
// [key, value] pairs.
//
// USAGE: rpcprof-profile-read pprof|otlp FILE
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// frameTypeKey is the semantic conventions' attribute of a location naming its kind of frame.
const frameTypeKey = "profile.frame.type"

type sample struct {
	Frames     []string `json:"frames"`
	FrameTypes []string `json:"frame_types,omitempty"`
	Values     []int64  `json:"values"`
	Labels     [][2]any `json:"labels"`
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "pprof" && os.Args[1] != "otlp") {
		fmt.Fprintln(os.Stderr, "usage: rpcprof-profile-read pprof|otlp FILE")
		os.Exit(2)
	}
	var doc any
	var err error
	if os.Args[1] == "pprof" {
		doc, err = readPprof(os.Args[2])
	} else {
		doc, err = readOTLP(os.Args[2])
	}
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(doc)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rpcprof-profile-read: %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
}

func valueType(t *profile.ValueType) [2]string {
	if t == nil {
		return [2]string{}
	}
	return [2]string{t.Type, t.Unit}
}

func readPprof(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, err
	}
	types := [][2]string{}
	for _, t := range p.SampleType {
		types = append(types, valueType(t))
	}
	samples := make([]sample, 0, len(p.Sample))
	for _, s := range p.Sample {
		var leafFirst []string
		for _, loc := range s.Location { // leaf first; a location's lines are leaf first too (inlining)
			for _, line := range loc.Line {
				leafFirst = append(leafFirst, line.Function.Name)
			}
		}
		out := sample{Frames: reversed(leafFirst), Values: s.Value, Labels: [][2]any{}}
		for _, key := range slices.Sorted(maps.Keys(s.Label)) {
			for _, v := range s.Label[key] {
				out.Labels = append(out.Labels, [2]any{key, v})
			}
		}
		for _, key := range slices.Sorted(maps.Keys(s.NumLabel)) {
			for _, v := range s.NumLabel[key] {
				out.Labels = append(out.Labels, [2]any{key, v})
			}
		}
		samples = append(samples, out)
	}
	return map[string]any{"sample_types": types, "period_type": valueType(p.PeriodType), "period": p.Period,
		"time_nanos": p.TimeNanos, "duration_nanos": p.DurationNanos, "comments": p.Comments,
		"samples": samples}, nil
}

// tables: the dictionary, each index checked before use (pdata's At panics out of range).
type tables struct {
	d pprofile.ProfilesDictionary
}

func (t tables) str(i int32) (string, error) {
	if i < 0 || int(i) >= t.d.StringTable().Len() {
		return "", fmt.Errorf("string index %d out of the string table (%d)", i, t.d.StringTable().Len())
	}
	return t.d.StringTable().At(int(i)), nil
}

func (t tables) attributes(indices pcommon.Int32Slice) ([][2]any, error) {
	out := [][2]any{}
	for _, i := range indices.All() {
		if i < 0 || int(i) >= t.d.AttributeTable().Len() {
			return nil, fmt.Errorf("attribute index %d out of the attribute table (%d)", i, t.d.AttributeTable().Len())
		}
		kv := t.d.AttributeTable().At(int(i))
		key, err := t.str(kv.KeyStrindex())
		if err != nil {
			return nil, err
		}
		out = append(out, [2]any{key, kv.Value().AsRaw()})
	}
	return out, nil
}

func (t tables) valueType(v pprofile.ValueType) ([2]string, error) {
	kind, err := t.str(v.TypeStrindex())
	if err != nil {
		return [2]string{}, err
	}
	unit, err := t.str(v.UnitStrindex())
	return [2]string{kind, unit}, err
}

// frames: a stack's function names root first, and each location's frame type ("" when it has none).
func (t tables) frames(stack int32) ([]string, []string, error) {
	if stack < 0 || int(stack) >= t.d.StackTable().Len() {
		return nil, nil, fmt.Errorf("stack index %d out of the stack table (%d)", stack, t.d.StackTable().Len())
	}
	var names, kinds []string
	for _, li := range t.d.StackTable().At(int(stack)).LocationIndices().All() { // leaf first
		if li < 0 || int(li) >= t.d.LocationTable().Len() {
			return nil, nil, fmt.Errorf("location index %d out of the location table (%d)", li, t.d.LocationTable().Len())
		}
		loc := t.d.LocationTable().At(int(li))
		attrs, err := t.attributes(loc.AttributeIndices())
		if err != nil {
			return nil, nil, err
		}
		kind := ""
		for _, kv := range attrs {
			if kv[0] == frameTypeKey {
				kind = fmt.Sprint(kv[1])
			}
		}
		for _, line := range loc.Lines().All() {
			fi := line.FunctionIndex()
			if fi < 0 || int(fi) >= t.d.FunctionTable().Len() {
				return nil, nil, fmt.Errorf("function index %d out of the function table (%d)", fi, t.d.FunctionTable().Len())
			}
			name, err := t.str(t.d.FunctionTable().At(int(fi)).NameStrindex())
			if err != nil {
				return nil, nil, err
			}
			names, kinds = append(names, name), append(kinds, kind)
		}
	}
	return reversed(names), reversed(kinds), nil
}

// zeroEntries: whether each dictionary table starts with its zero value, as the proto asks.
func zeroEntries(d pprofile.ProfilesDictionary) map[string]bool {
	return map[string]bool{
		"mapping":   d.MappingTable().Len() > 0 && d.MappingTable().At(0).Equal(pprofile.NewMapping()),
		"location":  d.LocationTable().Len() > 0 && d.LocationTable().At(0).Equal(pprofile.NewLocation()),
		"function":  d.FunctionTable().Len() > 0 && d.FunctionTable().At(0).Equal(pprofile.NewFunction()),
		"link":      d.LinkTable().Len() > 0 && d.LinkTable().At(0).Equal(pprofile.NewLink()),
		"attribute": d.AttributeTable().Len() > 0 && d.AttributeTable().At(0).Equal(pprofile.NewKeyValueAndUnit()),
		"stack":     d.StackTable().Len() > 0 && d.StackTable().At(0).Equal(pprofile.NewStack()),
		"string":    d.StringTable().Len() > 0 && d.StringTable().At(0) == "",
	}
}

func readOTLP(path string) (map[string]any, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pd pprofile.Profiles
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		pd, err = (&pprofile.JSONUnmarshaler{DisallowUnknownFields: true}).UnmarshalProfiles(buf)
	} else {
		pd, err = (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(buf)
	}
	if err != nil {
		return nil, err
	}
	t := tables{pd.Dictionary()}
	resources := []any{}
	for _, rp := range pd.ResourceProfiles().All() {
		scopes := []any{}
		for _, sp := range rp.ScopeProfiles().All() {
			profiles := []any{}
			for _, p := range sp.Profiles().All() {
				doc, err := t.profile(p)
				if err != nil {
					return nil, err
				}
				profiles = append(profiles, doc)
			}
			scopes = append(scopes, map[string]any{"name": sp.Scope().Name(), "version": sp.Scope().Version(),
				"profiles": profiles})
		}
		resources = append(resources, map[string]any{"attributes": rp.Resource().Attributes().AsRaw(),
			"scopes": scopes})
	}
	return map[string]any{"zero_entries": zeroEntries(pd.Dictionary()), "resources": resources}, nil
}

func (t tables) profile(p pprofile.Profile) (map[string]any, error) {
	sampleType, err := t.valueType(p.SampleType())
	if err != nil {
		return nil, err
	}
	periodType, err := t.valueType(p.PeriodType())
	if err != nil {
		return nil, err
	}
	attrs, err := t.attributes(p.AttributeIndices())
	if err != nil {
		return nil, err
	}
	samples := make([]sample, 0, p.Samples().Len())
	for _, s := range p.Samples().All() {
		names, kinds, err := t.frames(s.StackIndex())
		if err != nil {
			return nil, err
		}
		labels, err := t.attributes(s.AttributeIndices())
		if err != nil {
			return nil, err
		}
		samples = append(samples, sample{Frames: names, FrameTypes: kinds, Values: s.Values().AsRaw(), Labels: labels})
	}
	return map[string]any{"sample_type": sampleType, "period_type": periodType, "period": p.Period(),
		"time_unix_nano": uint64(p.Time()), "duration_nano": p.DurationNano(), "attributes": attrs,
		"samples": samples}, nil
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
