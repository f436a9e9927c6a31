package proxy

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"minica/internal/testca"
)

// The gRPC tests need no protoc: the service is registered by hand with a
// codec that passes the message bytes through.

// frame is a gRPC message of the test service: its bytes, as they are.
type frame struct{ b []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	f.b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "raw" }

// blob is a binary trailer value: gRPC sends -bin metadata base64-encoded.
const blob = "\x00\xffbin\n"

// echoService is minica.test.Echo:
//
//	Unary  answers the JSON of the request metadata, or, for "fail", the
//	       status NOT_FOUND with a message; both with trailers
//	Count  answers N messages for a request "N" (server streaming)
//	Chat   echoes each message as it comes (bidirectional streaming)
//
// Every call sets the header x-header and the trailers x-trailer and
// x-blob-bin.
var echoService = grpc.ServiceDesc{
	ServiceName: "minica.test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Unary", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(frame)
		if err := dec(in); err != nil {
			return nil, err
		}
		grpc.SetHeader(ctx, metadata.Pairs("x-header", "h"))
		grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t", "x-blob-bin", blob))
		if string(in.b) == "fail" {
			return nil, status.Error(codes.NotFound, "no such thing: Zoë")
		}
		md, _ := metadata.FromIncomingContext(ctx)
		b, err := json.Marshal(md)
		return &frame{b}, err
	}}},
	Streams: []grpc.StreamDesc{
		{StreamName: "Count", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
			in := new(frame)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			n, err := strconv.Atoi(string(in.b))
			if err != nil || n > 100 {
				return status.Errorf(codes.InvalidArgument, "count %q", in.b)
			}
			ss.SetHeader(metadata.Pairs("x-header", "h"))
			ss.SetTrailer(metadata.Pairs("x-trailer", "t", "x-blob-bin", blob))
			for i := range n {
				if err := ss.SendMsg(&frame{[]byte(strconv.Itoa(i))}); err != nil {
					return err
				}
			}
			return nil
		}},
		{StreamName: "Chat", ServerStreams: true, ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
			ss.SetHeader(metadata.Pairs("x-header", "h"))
			ss.SetTrailer(metadata.Pairs("x-trailer", "t", "x-blob-bin", blob))
			for range 100 {
				in := new(frame)
				if err := ss.RecvMsg(in); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				if err := ss.SendMsg(&frame{append([]byte("echo "), in.b...)}); err != nil {
					return err
				}
			}
			return nil
		}},
	},
}

// grpcUpstream serves echoService on 127.0.0.1, over TLS with a
// certificate of upCA when upCA is not nil, else over plain TCP (h2c).
func grpcUpstream(t *testing.T, upCA *testca.CA) string {
	t.Helper()
	opts := []grpc.ServerOption{grpc.ForceServerCodec(rawCodec{})}
	if upCA != nil {
		cert, key := upCA.Server(t, "localhost")
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}},
			MinVersion:   tls.VersionTLS12,
		})))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&echoService, struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// grpcClient is a gRPC client of the proxy presenting cert.
func grpcClient(t *testing.T, e *env, cert *x509.Certificate, key crypto.Signer) *grpc.ClientConn {
	t.Helper()
	cfg := e.tlsConfig(cert, key)
	cc, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// grpcEnv is a proxy, configured further by mod, in front of a gRPC
// upstream over TLS (HTTP/2 on both sides), and a client of it as alice.
func grpcEnv(t *testing.T, mod func(*Config)) (*env, *grpc.ClientConn) {
	t.Helper()
	upCA := testca.New(t, "Upstream CA")
	upAddr := grpcUpstream(t, upCA)
	e := newEnv(t, func(c *Config) {
		c.Upstream = "https://" + upAddr
		c.UpstreamRootCAs = x509.NewCertPool()
		c.UpstreamRootCAs.AddCert(upCA.Cert)
		if mod != nil {
			mod(c)
		}
	})
	cert, key := e.ca.Leaf(t, aliceTemplate())
	return e, grpcClient(t, e, cert, key)
}

// checkMD fails unless the header and trailer metadata of a call are the
// service's.
func checkMD(t *testing.T, call string, header, trailer metadata.MD) {
	t.Helper()
	if got := header.Get("x-header"); len(got) != 1 || got[0] != "h" {
		t.Errorf("%s: header x-header %q; want [h]", call, got)
	}
	if got := trailer.Get("x-trailer"); len(got) != 1 || got[0] != "t" {
		t.Errorf("%s: trailer x-trailer %q; want [t]", call, got)
	}
	if got := trailer.Get("x-blob-bin"); len(got) != 1 || got[0] != blob {
		t.Errorf("%s: trailer x-blob-bin %q; want [%q]", call, got, blob)
	}
}

// TestGRPC calls a real gRPC server (google.golang.org/grpc) through the
// proxy, over HTTP/2 on both sides (an https upstream): unary calls with
// their status and trailers, a failing call (grpc-status and message in a
// trailers-only response), server and bidirectional streaming; the
// identity reaches the service as metadata, and metadata spoofing it
// does not.
func TestGRPC(t *testing.T) {
	e, cc := grpcEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spoofed := metadata.AppendToOutgoingContext(ctx, "x-ssl-client-cn", "spoof", "x-ssl-client-verify", "spoof",
		"x-forwarded-for", "spoof", "client-cert", "spoof", "x-forwarded-client-cert", "spoof")

	t.Run("unary", func(t *testing.T) {
		var header, trailer metadata.MD
		out := new(frame)
		if err := cc.Invoke(spoofed, "/minica.test.Echo/Unary", &frame{[]byte("hi")}, out, grpc.Header(&header), grpc.Trailer(&trailer)); err != nil {
			t.Fatalf("Unary: %v\n%s", err, e.log.String())
		}
		var md map[string][]string
		if err := json.Unmarshal(out.b, &md); err != nil {
			t.Fatalf("Unary answered %q: %v", out.b, err)
		}
		for k, vs := range md {
			for _, v := range vs {
				if strings.Contains(v, "spoof") {
					t.Errorf("the service got the spoofed %s: %q", k, v)
				}
			}
		}
		for k, want := range map[string]string{"x-ssl-client-cn": "alice", "x-ssl-client-verify": "SUCCESS", "x-forwarded-proto": "https"} {
			if got := md[k]; len(got) != 1 || got[0] != want {
				t.Errorf("the service got %s %q; want [%s]", k, got, want)
			}
		}
		checkMD(t, "Unary", header, trailer)
	})
	t.Run("status", func(t *testing.T) {
		var header, trailer metadata.MD
		err := cc.Invoke(ctx, "/minica.test.Echo/Unary", &frame{[]byte("fail")}, new(frame), grpc.Header(&header), grpc.Trailer(&trailer))
		if s := status.Convert(err); s.Code() != codes.NotFound || s.Message() != "no such thing: Zoë" {
			t.Errorf("Unary(fail) = %v; want NotFound \"no such thing: Zoë\"", err)
		}
		checkMD(t, "Unary(fail)", header, trailer)
	})
	t.Run("server streaming", func(t *testing.T) {
		s, err := cc.NewStream(ctx, &echoService.Streams[0], "/minica.test.Echo/Count")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(&frame{[]byte("25")}); err != nil {
			t.Fatal(err)
		}
		s.CloseSend()
		n := 0
		for ; n < 100; n++ {
			m := new(frame)
			if err := s.RecvMsg(m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("Count: message %d: %v", n, err)
			}
			if string(m.b) != strconv.Itoa(n) {
				t.Fatalf("Count: message %d is %q", n, m.b)
			}
		}
		if n != 25 {
			t.Errorf("Count(25): %d messages", n)
		}
		header, _ := s.Header()
		checkMD(t, "Count", header, s.Trailer())
	})
	t.Run("bidirectional streaming", func(t *testing.T) {
		s, err := cc.NewStream(ctx, &echoService.Streams[1], "/minica.test.Echo/Chat")
		if err != nil {
			t.Fatal(err)
		}
		// Each answer comes back before the next message is sent: the
		// proxy streams both ways at once.
		for i := range 5 {
			msg := "m" + strconv.Itoa(i)
			if err := s.SendMsg(&frame{[]byte(msg)}); err != nil {
				t.Fatal(err)
			}
			m := new(frame)
			if err := s.RecvMsg(m); err != nil || string(m.b) != "echo "+msg {
				t.Fatalf("Chat: %q, %v; want %q", m.b, err, "echo "+msg)
			}
		}
		s.CloseSend()
		if err := s.RecvMsg(new(frame)); !errors.Is(err, io.EOF) {
			t.Errorf("Chat after CloseSend: %v; want io.EOF", err)
		}
		header, _ := s.Header()
		checkMD(t, "Chat", header, s.Trailer())
	})
	t.Run("no client certificate", func(t *testing.T) {
		err := grpcClient(t, e, nil, nil).Invoke(ctx, "/minica.test.Echo/Unary", &frame{[]byte("hi")}, new(frame))
		if status.Code(err) != codes.Unavailable {
			t.Errorf("Unary without a certificate: %v; want Unavailable (the handshake is refused)", err)
		}
	})
	e.waitLog("request ", "cn=alice", "uri=/minica.test.Echo/Chat", "proto=HTTP/2.0", "status=200")
}

// TestGRPCPlainUpstream shows why a gRPC upstream must be https: the
// proxy speaks HTTP/1.1 to an http upstream (it has no h2c), which a gRPC
// server does not answer, so the call fails with 502 and UNAVAILABLE.
func TestGRPCPlainUpstream(t *testing.T) {
	upAddr := grpcUpstream(t, nil)
	e := newEnv(t, func(c *Config) { c.Upstream = "http://" + upAddr })
	cert, key := e.ca.Leaf(t, aliceTemplate())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := grpcClient(t, e, cert, key).Invoke(ctx, "/minica.test.Echo/Unary", &frame{[]byte("hi")}, new(frame))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("Unary to an http upstream: %v; want Unavailable", err)
	}
	e.waitLog("request ", "cn=alice", "status=502")
}

// TestGRPCIdleClientStream shows the limit docs/proxy.md states: a client
// stream that sends nothing for BodyTimeout is cut as a stalled request
// body, the call failing and the log saying body-timeout.
func TestGRPCIdleClientStream(t *testing.T) {
	e, cc := grpcEnv(t, func(c *Config) { c.BodyTimeout = 200 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	s, err := cc.NewStream(ctx, &echoService.Streams[1], "/minica.test.Echo/Chat")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&frame{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(new(frame)); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	// The client then sends nothing; the next receive ends with the
	// stream (the context's bound only keeps a failing test from hanging).
	err = s.RecvMsg(new(frame))
	if err == nil || status.Code(err) == codes.DeadlineExceeded {
		t.Fatalf("an idle Chat: %v; want it cut by the proxy", err)
	}
	e.waitLog("request ", "uri=/minica.test.Echo/Chat", "reason=body-timeout")
}
