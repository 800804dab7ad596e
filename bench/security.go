package main

import (
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// kafkaSec is how the bench's own Kafka clients (the drain's topics,
// producer, replicas and group checks, the lag sampler) connect: the
// FLASHSALE_KAFKA_* settings, as the deployables. run sets it once the
// settings are parsed; nil is plaintext (tests).
var kafkaSec *orderlog.Security

func setKafkaSecurity(c config.Common) error {
	sec, err := orderlog.NewSecurity(c.Kafka)
	if err != nil {
		return err
	}
	kafkaSec = sec
	return nil
}

// kafkaDialer is kafkaSec's dialer under clientID (the drain replicas are
// told apart by it in the group).
func kafkaDialer(clientID string) *kafka.Dialer {
	d := kafkaSec.Dialer()
	d.ClientID = clientID
	return d
}
