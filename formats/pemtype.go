package formats

import "encoding/pem"

// PEMType returns the type of the first PEM block in data ("CERTIFICATE",
// "CERTIFICATE REQUEST"...), for messages that name what a file holds; ok
// is false when data holds no whole PEM block.
func PEMType(data []byte) (typ string, ok bool) {
	block, _ := pem.Decode(data)
	if block == nil {
		return "", false
	}
	return block.Type, true
}
