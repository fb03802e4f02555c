//go:build !linux

package mcp_test

const orphanHelperEnv = "TOOLSIFT_ORPHAN_HELPER"

func orphanHelper() {}
