// Package installcheck plays a user of this repository's modules.
//
// Inside the tree every nested module finds the core (and its sibling
// modules) through a replace directive. A user never sees those: the go
// command ignores the replace directives of a dependency, so a nested module
// installs only if every in-tree module it requires exists at the version it
// names. This package checks exactly that, the way a user would meet it:
//
//  1. [Publish] writes every published module of the working tree, at the
//     release version, into a directory laid out as a module proxy (what
//     GOPROXY=file://DIR reads), zipped by golang.org/x/mod/zip as the
//     public proxy zips a tag;
//  2. [Consume] creates a throwaway module outside the tree and, with
//     GOWORK=off and that proxy first in GOPROXY, runs `go get` for each
//     published module and vets a program that imports every package a
//     user can import, and those packages (type-checking them, their tests
//     and Examples: what does not compile fails as it would in go build).
//
// A module is published unless its go.mod says "// Not published" in a
// comment before its module line (test and benchmark modules do). The tests
// of this package run both steps over the real tree in `make test`, and pin
// that the check fails for the break it exists for (a nested module that
// requires a core version nobody can download).
package installcheck
