// Package jsonlines is the loop every oracle harness runs: one JSON scenario
// a line on standard input, one JSON answer a line on standard output, in
// the same order, each answer written out before the next line is read (a
// caller may wait for it). Blank lines are skipped.
//
// A harness builds its Modes from functions of the decoded scenario (Answer,
// or Try or TryStrict when answering can fail) and calls Serve, or
// ServeMode to let its argument choose one.
package jsonlines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// A Mode answers one scenario, given as its line of JSON.
type Mode func(line []byte) (any, error)

// Try makes a Mode of `answer`: the line is decoded into a new T (fields T
// does not have are ignored) and answered.
func Try[T, A any](answer func(*T) (A, error)) Mode { return decoded(answer, false) }

// TryStrict is Try refusing a scenario with a field T does not have: the two
// sides of the oracle then disagree on what a scenario holds.
func TryStrict[T, A any](answer func(*T) (A, error)) Mode { return decoded(answer, true) }

func decoded[T, A any](answer func(*T) (A, error), strict bool) Mode {
	return func(line []byte) (any, error) {
		var scenario T
		dec := json.NewDecoder(bytes.NewReader(line))
		if strict {
			dec.DisallowUnknownFields()
		}
		if err := dec.Decode(&scenario); err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		return answer(&scenario)
	}
}

// Answer is Try for an answer that cannot fail.
func Answer[T, A any](answer func(*T) A) Mode {
	return Try(func(s *T) (A, error) { return answer(s), nil })
}

// Serve answers every line of standard input with `mode` until its end. The
// first error (a scenario that does not decode, an answer that fails, a
// read or a write) is printed as "<program>: line N: <error>" and ends the
// process with status 2, after the answers before it are written.
func Serve(program string, mode Mode) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, err := in.ReadBytes('\n')
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			answer, aerr := mode(trimmed)
			if aerr == nil {
				aerr = enc.Encode(answer)
			}
			if aerr == nil {
				aerr = out.Flush()
			}
			if aerr != nil {
				out.Flush()
				Fail(program, "line %d: %v", n, aerr)
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			Fail(program, "reading: %v", err)
		}
	}
}

// ServeMode serves the mode the process's one argument names among `modes`;
// other arguments end it with the usage (status 2).
func ServeMode(program string, modes map[string]Mode) {
	if len(os.Args) != 2 || modes[os.Args[1]] == nil {
		names := make([]string, 0, len(modes))
		for name := range modes {
			names = append(names, name)
		}
		sort.Strings(names)
		Fail(program, "usage: %s %s < scenarios.jsonl", program, strings.Join(names, "|"))
	}
	Serve(program, modes[os.Args[1]])
}

// Fail prints "<program>: <message>" to standard error and ends the process
// with status 2.
func Fail(program, format string, args ...any) {
	fmt.Fprintf(os.Stderr, program+": "+format+"\n", args...)
	os.Exit(2)
}
