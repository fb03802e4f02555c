package pgtest

import (
	"os"
	"syscall"
)

// sysProcAttr runs the cluster's binaries as cred (nil: this user); the
// server gets SIGQUIT (PostgreSQL's immediate shutdown) if the test binary
// dies first.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}

// memDirMin is the free space memDir asks of a tmpfs: a cluster is about
// 40 MB, each test's database 8 MB more (a container's /dev/shm is often
// 64 MB in all).
const memDirMin = 2 << 30

// memDir returns /dev/shm when it is a tmpfs anyone may write with at
// least memDirMin free, else "": a cluster's files are written and removed
// by every test's CREATE DATABASE, and on a disk's file system that
// (journal, block allocation) was most of the server's CPU, for data no
// test keeps.
func memDir() string {
	const dir = "/dev/shm"
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o002 == 0 {
		return ""
	}
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if syscall.Statfs(dir, &st) != nil || st.Type != tmpfsMagic || st.Bavail*uint64(st.Bsize) < memDirMin {
		return ""
	}
	return dir
}
