package openshift

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// object is one JSON object of the input, at a field path. A converter takes each key as
// it converts it; rest then reports every key that nobody took, so that no field is lost
// without a warning.
type object struct {
	path string
	m    map[string]any
}

// at is the path of key inside o.
func (o object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// take removes key from o and returns its value. A key set to null counts as missing.
func (o object) take(key string) (any, bool) {
	v, ok := o.m[key]
	delete(o.m, key)
	return v, ok && v != nil
}

// notes collects the notes of one object of the input.
type notes struct {
	object string
	list   []Note
}

func (n *notes) add(sev Severity, field, format string, args ...any) {
	n.list = append(n.list, Note{Object: n.object, Field: field, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

func (n *notes) warn(field, format string, args ...any) {
	n.add(SeverityWarning, field, format, args...)
}

func (n *notes) note(field, format string, args ...any) {
	n.add(SeverityNote, field, format, args...)
}

// noSuchField is the warning about a field of the input that the converter does not know.
const noSuchField = "not converted: Stagehand has no such field"

// rest warns about every key left in o, in order: fields Stagehand does not have.
func (n *notes) rest(o object) { n.restWith(o, noSuchField) }

// restWith warns about every key left in o, in order, with message.
func (n *notes) restWith(o object, message string) {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n.warn(o.at(k), "%s", message)
	}
}

// takeObject takes key from o as an object. It reports false when the key is missing or
// null, and warns when it holds something else than an object.
func (n *notes) takeObject(o object, key string) (object, bool) {
	v, ok := o.take(key)
	if !ok {
		return object{}, false
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		n.warn(o.at(key), "not converted: want an object, got %s", describeValue(v))
		return object{}, false
	}
	return object{path: o.at(key), m: m}, true
}

// takeInto takes key from o and decodes it into out, a pointer. It reports whether the key
// was there (and not null) and decoded.
func (n *notes) takeInto(o object, key string, out any) bool {
	v, ok := o.take(key)
	if !ok {
		return false
	}
	return n.decode(o.at(key), v, out)
}

// decode decodes v, a value of the input at path, into out, a pointer to a Go API type.
// Field names match exactly, as in the Kubernetes API. Unknown fields inside v are reported
// one by one, and the rest of v is still decoded; a value of the wrong type is reported and
// leaves out unchanged.
func (n *notes) decode(path string, v any, out any) bool {
	target := reflect.ValueOf(out).Elem()
	holderType := reflect.StructOf([]reflect.StructField{{Name: "V", Type: target.Type(), Tag: `json:"v"`}})
	holder := reflect.New(holderType)
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(map[string]any{"v": v}, holder.Interface(), true)
	if err != nil && !runtime.IsStrictDecodingError(err) {
		n.warn(path, "not converted: %s", typeError(v, holderType, err))
		return false
	}
	if strict, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range strict.Errors() {
			n.warn(path+unknownFieldPath(e), "not converted: unknown field (a typo, or a field of a newer Kubernetes version?)")
		}
	}
	target.Set(holder.Elem().Field(0))
	return true
}

// unknownFieldPath turns the converter's `unknown field "v.spec.x"` into ".spec.x".
func unknownFieldPath(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `"`); i >= 0 {
		if field, uerr := strconv.Unquote(msg[i:]); uerr == nil {
			return strings.TrimPrefix(field, "v")
		}
	}
	return " (" + msg + ")"
}

// typeError explains why v does not fit holderType, naming the field inside v that does not
// fit when there is one. encoding/json words it better than the unstructured converter.
func typeError(v any, holderType reflect.Type, convErr error) string {
	data, err := json.Marshal(map[string]any{"v": v})
	if err != nil {
		return convErr.Error()
	}
	err = json.Unmarshal(data, reflect.New(holderType).Interface())
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return convErr.Error()
	}
	where := ""
	if inner := strings.TrimPrefix(typeErr.Field, "v"); inner != "" {
		where = " at " + strings.TrimPrefix(inner, ".")
	}
	return fmt.Sprintf("want %s%s, got %s", describeType(typeErr.Type), where, typeErr.Value)
}

// describeType names a Go type the way a YAML author thinks of it.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// describeValue names the kind of a decoded JSON value.
func describeValue(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
