package main

import "testing"

func TestGenerateKeysAreOptionalAndChecked(t *testing.T) {
	if spec, err := generateSpecOf(map[string]string{"kbatch.topics": "t"}, 1); spec != nil || err != nil {
		t.Fatalf("no generate keys: %v %v", spec, err)
	}
	spec, err := generateSpecOf(map[string]string{"kbatch.generate.messages": "3000",
		"kbatch.generate.size": "64", "kbatch.generate.ids": "true"}, 1)
	if err != nil || spec.messages != 3000 || spec.size != 64 || !spec.ids {
		t.Fatalf("%+v %v", spec, err)
	}
	if spec, _ := generateSpecOf(map[string]string{"kbatch.generate.messages": "5"}, 1); spec.size != 100 {
		t.Fatalf("default size: %+v", spec)
	}
	for _, bad := range []map[string]string{
		{"kbatch.generate.messages": "0"},
		{"kbatch.generate.messages": "many"},
		{"kbatch.generate.messages": "5", "kbatch.generate.size": "-1"},
		{"kbatch.generate.messages": "5", "kbatch.generate.size": "4", "kbatch.generate.ids": "true"},
		{"kbatch.generate.messages": "5", "kbatch.generate.ids": "yes"},
		{"kbatch.generate.size": "100"},
	} {
		if _, err := generateSpecOf(bad, 1); err == nil {
			t.Fatalf("accepted %v", bad)
		}
	}
	if _, err := generateSpecOf(map[string]string{"kbatch.generate.messages": "5"}, 2); err == nil {
		t.Fatal("accepted two topics")
	}
}
