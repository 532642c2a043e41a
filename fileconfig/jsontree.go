package fileconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// jsonTree decodes one JSON document into the generic tree Decode reads
// (objects as map[string]any, numbers as json.Number) and returns, as well,
// the path of every key given twice, exactly, in one object: a map keeps
// only the last, and encoding/json would let it win in silence. Keys that
// differ only in case are two keys of the tree; Decode refuses them where
// keys match ignoring case (an entry's settings, the sections).
func jsonTree(data []byte) (tree any, dups [][]string, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tree, err = readJSONValue(dec, nil, &dups)
	if err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("unexpected data after the JSON document")
	}
	return tree, dups, nil
}

// readJSONValue reads the value that starts at the decoder's next token;
// path is the keys leading to it.
func readJSONValue(dec *json.Decoder, path []string, dups *[][]string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // a string, json.Number, bool or nil
	}
	switch d {
	case '{':
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string) // the decoder checks that an object key is a string
			at := append(path[:len(path):len(path)], k)
			v, err := readJSONValue(dec, at, dups)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				*dups = append(*dups, at)
			}
			m[k] = v
		}
		_, err := dec.Token() // '}'
		return m, err
	case '[':
		list := []any{}
		for i := 0; dec.More(); i++ {
			// An item is "[i]" in the path, so that a key given twice in it
			// is named as every other problem of a list item is:
			// "classes[0].name".
			v, err := readJSONValue(dec, append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"), dups)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token() // ']'
		return list, err
	}
	return nil, errors.New("unexpected " + d.String()) // never: the decoder refuses a stray closing delimiter
}

// reportDuplicates reports every key that jsonTree found given twice: a
// section, an entry (a config or instance name) or a key inside an entry.
func reportDuplicates(dups [][]string, r *report) {
	for _, path := range dups {
		kind := ""
		if len(path) >= 2 {
			switch normKey(path[0]) {
			case "configs":
				kind = "config"
			case "instances":
				kind = "instance"
			case "budgets":
				kind = "budget"
			}
		}
		switch {
		case kind == "":
			r.add("", "", joinPath(path), nil, "given twice")
		case len(path) == 2:
			r.add(kind, path[1], "", nil, "given twice (the "+kind+" name is a key of "+path[0]+")")
		default:
			r.add(kind, path[1], joinPath(path[2:]), nil, "given twice")
		}
	}
}

// joinPath writes a path as messages write a key: "adaptive.min",
// "classes[0].name".
func joinPath(path []string) string {
	var b bytes.Buffer
	for i, k := range path {
		if i > 0 && !strings.HasPrefix(k, "[") {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}
