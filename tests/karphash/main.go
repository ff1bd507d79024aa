// karphash prints Karpenter's drift hashes of NodePool and EC2NodeClass objects, computed
// by Karpenter's own code (sigs.k8s.io/karpenter and aws/karpenter-provider-aws at the
// version nodewarden pins), to produce the expected values of nodewarden's hash tests.
// Test tooling only: nothing here is part of nodewarden.
//
//	go run . [-ca-bundle FILE] FILE...
//
// For each object of each file (YAML or JSON, "---" separated) it prints
//
//	<file> <kind> <name> <hash> [<hash with the CA bundle>]
//
// where the EC2NodeClass's second hash is Hash(caBundle) with the bundle read from FILE
// (the first is Hash(nil), Karpenter's value when it knows no CA bundle). Objects are
// decoded as a Karpenter controller decodes them (YAML to JSON, then the case-sensitive
// JSON decoder the Kubernetes clients use).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	kjson "sigs.k8s.io/json"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"
)

func splitDocs(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	docs = append(docs, cur.Bytes())
	return docs
}

func main() {
	caFile := flag.String("ca-bundle", "", "file holding the CA bundle (base64 PEM) for the second EC2NodeClass hash")
	flag.Parse()
	var ca *string
	if *caFile != "" {
		b, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s := strings.TrimSpace(string(b))
		ca = &s
	}
	rc := 0
	for _, f := range flag.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, doc := range splitDocs(b) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
				rc = 1
				continue
			}
			var tm struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
				rc = 1
				continue
			}
			name := filepath.Base(f)
			switch tm.Kind {
			case "NodePool":
				var np karpv1.NodePool
				if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &np); err != nil {
					fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
					rc = 1
					continue
				}
				fmt.Printf("%s NodePool %s %s\n", name, tm.Metadata.Name, np.Hash())
			case "EC2NodeClass":
				var nc awsv1.EC2NodeClass
				if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &nc); err != nil {
					fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
					rc = 1
					continue
				}
				if ca != nil {
					fmt.Printf("%s EC2NodeClass %s %s %s\n", name, tm.Metadata.Name, nc.Hash(nil), nc.Hash(ca))
				} else {
					fmt.Printf("%s EC2NodeClass %s %s\n", name, tm.Metadata.Name, nc.Hash(nil))
				}
			default:
				fmt.Fprintf(os.Stderr, "%s: kind %q is neither NodePool nor EC2NodeClass\n", f, tm.Kind)
				rc = 1
			}
		}
	}
	os.Exit(rc)
}
