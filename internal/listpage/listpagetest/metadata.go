package listpagetest

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// ProtobufMetadata encodes list as the API server sends a list of metadata
// to a client that accepts protobuf (the magic prefix, then a
// runtime.Unknown around the list), with apimachinery's own serializer.
func ProtobufMetadata(list *metav1.PartialObjectMetadataList) ([]byte, error) {
	s, err := metaScheme()
	if err != nil {
		return nil, err
	}
	list = list.DeepCopy()
	list.APIVersion, list.Kind = metav1.SchemeGroupVersion.String(), "PartialObjectMetadataList"
	var buf bytes.Buffer
	err = protobuf.NewSerializer(s, s).Encode(list, &buf)
	return buf.Bytes(), err
}

// DecodeProtobufMetadata decodes data as apimachinery's serializer does a
// protobuf list of metadata.
func DecodeProtobufMetadata(data []byte) (*metav1.PartialObjectMetadataList, error) {
	s, err := metaScheme()
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	_, _, err = protobuf.NewSerializer(s, s).Decode(data, nil, list)
	return list, err
}

// metaScheme knows lists of metadata.
func metaScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, metav1.AddMetaToScheme(s)
}
