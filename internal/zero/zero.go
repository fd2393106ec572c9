// Package zero gives zero values their documented defaults: a settings
// struct whose zero field means "the default" fills it with Default, one
// line per field.
package zero

import "cmp"

// Default sets *v to d when *v is zero or negative (for strings: empty).
func Default[T cmp.Ordered](v *T, d T) {
	var z T
	if *v <= z {
		*v = d
	}
}
