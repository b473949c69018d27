package e2e

import (
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
)

var foldTypes sync.Map // field → reflect.Type, or nil when not a valid tag

// GoDecodesKeyAs reports whether real encoding/json, decoding the object
// {key: 1} into a struct whose one field is tagged `json:"field"`, fills that
// field: whether a Go server reading arguments into structs (mcp-go's
// BindArguments, typed handlers) would take key as field. It is true for
// key == field and, through encoding/json's case-insensitive matching with
// Unicode simple folding, for keys such as "TO", "tO" for "to", "ſubject"
// (U+017F) for "subject" or "\u212aey" (Kelvin sign) for "key".
//
// It is false when field is not a name encoding/json accepts as a tag (it
// would then match the Go field name instead). key is encoded with
// json.Marshal, so invalid UTF-8 in it reads as U+FFFD, as it would on the
// wire. Safe for concurrent use; meant for differential fuzz tests.
func GoDecodesKeyAs(key, field string) bool {
	t := foldType(field)
	if t == nil {
		return false
	}
	k, err := json.Marshal(key)
	if err != nil {
		return false
	}
	v := reflect.New(t)
	if err := json.Unmarshal([]byte("{"+string(k)+":1}"), v.Interface()); err != nil {
		return false
	}
	return len(v.Elem().Field(0).Bytes()) > 0
}

// foldType returns struct { F json.RawMessage `json:"field"` }, or nil
// when encoding/json would not use field as the name.
func foldType(field string) reflect.Type {
	if t, ok := foldTypes.Load(field); ok {
		t, _ := t.(reflect.Type)
		return t
	}
	t := reflect.StructOf([]reflect.StructField{{
		Name: "F",
		Type: reflect.TypeFor[json.RawMessage](),
		Tag:  reflect.StructTag(`json:` + strconv.Quote(field)),
	}})
	// encoding/json ignores a tag name it deems invalid (and cuts at a
	// comma); check the name it really uses.
	v := reflect.New(t).Elem()
	v.Field(0).SetBytes([]byte("1"))
	b, err := json.Marshal(v.Interface())
	want, _ := json.Marshal(map[string]json.RawMessage{field: json.RawMessage("1")})
	if err != nil || string(b) != string(want) {
		foldTypes.Store(field, nil)
		return nil
	}
	foldTypes.Store(field, t)
	return t
}
