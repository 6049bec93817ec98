// Package kongduration makes kong read every time.Duration flag with
// runner.ParseDuration's rule (days included), for the binaries that parse
// with kong, so that they and the fast parsers read a duration alike.
package kongduration

import (
	"reflect"
	"time"

	"github.com/alecthomas/kong"
	"github.com/crongate/crongate/internal/runner"
)

// Option is kong's option that maps time.Duration to runner.ParseDuration.
func Option() kong.Option {
	return kong.TypeMapper(reflect.TypeOf(time.Duration(0)), kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
		var s string
		if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
			return err
		}
		d, err := runner.ParseDuration(s)
		if err != nil {
			return err
		}
		target.Set(reflect.ValueOf(d))
		return nil
	}))
}
