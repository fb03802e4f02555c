package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Memory is a Store in this process's memory: nothing outlives it and no
// other process sees it. The zero value is not usable; call NewMemory.
type Memory struct {
	mu     sync.Mutex
	vals   map[string][]byte
	locks  map[string]chan struct{}
	closed bool
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{vals: map[string][]byte{}, locks: map[string]chan struct{}{}}
}

func (m *Memory) check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.closed {
		return fmt.Errorf("store: memory store closed")
	}
	return CheckKey(key)
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, key); err != nil {
		return nil, err
	}
	v, ok := m.vals[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return slices.Clone(v), nil
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, key); err != nil {
		return err
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("store: %s: %d bytes, over MaxValueBytes", key, len(value))
	}
	m.vals[key] = append(make([]byte, 0, len(value)), value...)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, key); err != nil {
		return err
	}
	delete(m.vals, key)
	return nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	for k := range m.vals {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Lock implements Store; the lock is held within this process only.
func (m *Memory) Lock(ctx context.Context, key string) (func(), error) {
	for {
		m.mu.Lock()
		if err := m.check(ctx, key); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		held, ok := m.locks[key]
		if !ok {
			done := make(chan struct{})
			m.locks[key] = done
			m.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					m.mu.Lock()
					delete(m.locks, key)
					m.mu.Unlock()
					close(done)
				})
			}, nil
		}
		m.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
