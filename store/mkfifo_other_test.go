//go:build !unix

package store_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
