package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// mergePatch applies an RFC 7386 JSON merge patch to target (a decoded object).
func mergePatch(target any, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergePatch(tm[k], v)
	}
	return tm
}

// jsonPatch applies an RFC 6902 JSON patch (add, remove, replace, move, copy, test).
func jsonPatch(doc any, ops []map[string]any) (any, error) {
	for i, op := range ops {
		name, _ := op["op"].(string)
		path, _ := op["path"].(string)
		var err error
		switch name {
		case "add":
			doc, err = ptrAdd(doc, path, op["value"])
		case "remove":
			doc, _, err = ptrRemove(doc, path)
		case "replace":
			if _, err = ptrGet(doc, path); err == nil {
				doc, _, err = ptrRemove(doc, path)
				if err == nil {
					doc, err = ptrAdd(doc, path, op["value"])
				}
			}
		case "move", "copy":
			from, _ := op["from"].(string)
			var v any
			if name == "move" {
				doc, v, err = ptrRemove(doc, from)
			} else {
				v, err = ptrGet(doc, from)
				v = deepCopy(v)
			}
			if err == nil {
				doc, err = ptrAdd(doc, path, v)
			}
		case "test":
			var v any
			if v, err = ptrGet(doc, path); err == nil && !jsonEqual(v, op["value"]) {
				err = fmt.Errorf("testing value %s failed", path)
			}
		default:
			err = fmt.Errorf("unknown operation %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %v", i, name, path, err)
		}
	}
	return doc, nil
}

func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("invalid JSON pointer %q", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func arrayIndex(s string, n int, forAdd bool) (int, error) {
	if forAdd && s == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i > n || (!forAdd && i == n) {
		return 0, fmt.Errorf("index %q out of range", s)
	}
	return i, nil
}

func ptrGet(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, k := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return nil, fmt.Errorf("missing key %q", k)
			}
			cur = v
		case []any:
			i, err := arrayIndex(k, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("cannot descend into %q", k)
		}
	}
	return cur, nil
}

// ptrSet rebuilds the path with fn applied to the parent container of the last part.
func ptrEdit(doc any, parts []string, fn func(parent any, last string) (any, error)) (any, error) {
	if len(parts) == 1 {
		return fn(doc, parts[0])
	}
	k := parts[0]
	switch c := doc.(type) {
	case map[string]any:
		child, ok := c[k]
		if !ok {
			return nil, fmt.Errorf("missing key %q", k)
		}
		nc, err := ptrEdit(child, parts[1:], fn)
		if err != nil {
			return nil, err
		}
		c[k] = nc
		return c, nil
	case []any:
		i, err := arrayIndex(k, len(c), false)
		if err != nil {
			return nil, err
		}
		nc, err := ptrEdit(c[i], parts[1:], fn)
		if err != nil {
			return nil, err
		}
		c[i] = nc
		return c, nil
	}
	return nil, fmt.Errorf("cannot descend into %q", k)
}

func ptrAdd(doc any, p string, v any) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return v, nil
	}
	return ptrEdit(doc, parts, func(parent any, last string) (any, error) {
		switch c := parent.(type) {
		case map[string]any:
			c[last] = v
			return c, nil
		case []any:
			i, err := arrayIndex(last, len(c), true)
			if err != nil {
				return nil, err
			}
			c = append(c, nil)
			copy(c[i+1:], c[i:])
			c[i] = v
			return c, nil
		}
		return nil, fmt.Errorf("cannot add to %q", last)
	})
}

func ptrRemove(doc any, p string) (any, any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, nil, err
	}
	if len(parts) == 0 {
		return nil, nil, fmt.Errorf("cannot remove the whole document")
	}
	var removed any
	out, err := ptrEdit(doc, parts, func(parent any, last string) (any, error) {
		switch c := parent.(type) {
		case map[string]any:
			v, ok := c[last]
			if !ok {
				return nil, fmt.Errorf("missing key %q", last)
			}
			removed = v
			delete(c, last)
			return c, nil
		case []any:
			i, err := arrayIndex(last, len(c), false)
			if err != nil {
				return nil, err
			}
			removed = c[i]
			return append(c[:i:i], c[i+1:]...), nil
		}
		return nil, fmt.Errorf("cannot remove %q", last)
	})
	return out, removed, err
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	_ = d.Decode(&out)
	return out
}

// jsonEqual compares two decoded JSON values, numbers by value.
func jsonEqual(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case float64:
		return x
	case int:
		return float64(x)
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}
