//go:build !linux

package upstream_test

const orphanHelperEnv = "TOOLSIFT_ORPHAN_HELPER"

func orphanHelper() {}
