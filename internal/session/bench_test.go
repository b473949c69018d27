package session

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// benchOutput is one tool result of the size a mail or ticket tool returns.
func benchOutput(i int) string {
	return fmt.Sprintf("Ticket %d from customer%d@example.com: please forward the invoice to billing%d@partner.example, cc ops-%d@corp.example. Thanks!", i, i, i, i)
}

// BenchmarkTainted compares a taint check against a session of this
// process alone with one against the shared session of four proxies of
// one client, three of which keep recording output while it runs. Compare
// with: go test -run=^$ -bench=Tainted -count=10 ./internal/session | benchstat -col /state -
func BenchmarkTainted(b *testing.B) {
	b.Run("state=local", func(b *testing.B) {
		s := New()
		for i := 0; i < 4000; i++ {
			s.Output(fmt.Sprint("srv", i%4)).Record(benchOutput(i))
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, ok := s.Tainted("billing17@partner.example"); !ok {
				b.Fatal("not seen")
			}
		}
	})
	b.Run("state=shared4busy", func(b *testing.B) {
		c, err := FindClient(os.Getpid())
		if err != nil {
			c = Client{PID: os.Getpid(), Start: 1}
		}
		if p, err := readProc(os.Getpid()); err == nil {
			c = Client{PID: os.Getpid(), Start: p.start}
		}
		state := b.TempDir()
		var peers [4]*Session
		for i := range peers {
			if peers[i], err = JoinClient(state, c, func(string) {}); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < 4000; i++ {
			peers[i%4].Output(fmt.Sprint("srv", i%4)).Record(benchOutput(i))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 1; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-t.C:
						peers[w].Output(fmt.Sprint("srv", w)).Record(benchOutput(100000*w + i))
					}
				}
			}(w)
		}
		me := peers[0]
		me.Tainted("warm@up.example")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, ok := me.Tainted("billing17@partner.example"); !ok {
				b.Fatal("not seen")
			}
		}
		b.StopTimer()
		close(stop)
		wg.Wait()
	})
}
